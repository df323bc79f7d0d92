/* SPDX-License-Identifier: MIT */

#include "ctl.h"

int verb_top(int argc, char *argv[]) {
        return -EOPNOTSUPP;
}
