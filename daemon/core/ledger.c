/* SPDX-License-Identifier: MIT */

#include "ledger.h"

const char *ledger_unit_to_string(LedgerUnit unit) {
        static const char *const names[_LEDGER_UNIT_MAX] = {
                [LEDGER_PAGES] = "pages",
                [LEDGER_BYTES] = "bytes",
        };

        if (unit < 0 || unit >= _LEDGER_UNIT_MAX)
                return NULL;
        return names[unit];
}
