/* SPDX-License-Identifier: MIT */

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>

#include "bootphase.h"
#include "log.h"
#include "macro.h"
#include "snapshot-document.h"

int boot_phase_load(const char *path, json_t **ret) {
        _cleanup_close_ int fd = -EBADF;
        json_error_t e;
        struct stat st;

        *ret = NULL;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                if (errno == ENOENT)
                        return 0;
                return log_warning_errno(errno, "Cannot open the boot phase snapshot %s, not serving it: %m", path);
        }
        if (fstat(fd, &st) < 0)
                return log_warning_errno(errno, "Cannot stat %s, not serving it: %m", path);
        if (!S_ISREG(st.st_mode))
                return log_warning_errno(EBADFD, "%s is not a regular file, not serving it as the boot phase.", path);
        if ((uint64_t) st.st_size > BOOT_PHASE_BYTES_MAX)
                return log_warning_errno(EFBIG, "The boot phase snapshot %s is %jd bytes, over the %u a reply may carry; "
                                         "read it with memstrackctl report --from.", path, (intmax_t) st.st_size,
                                         BOOT_PHASE_BYTES_MAX);

        json_auto_t *doc = json_loadfd(fd, JSON_REJECT_DUPLICATES, &e);
        if (!doc)
                return log_warning_errno(EBADMSG, "The boot phase snapshot %s is not JSON (line %d: %s), not serving it.",
                                         path, e.line, e.text);
        json_t *version = json_object_get(doc, "memstrackSnapshot");
        if (!json_is_integer(version) || json_integer_value(version) != SNAPSHOT_FORMAT_VERSION ||
            !json_is_object(json_object_get(doc, "status")) || !json_is_object(json_object_get(doc, "stackTree")))
                return log_warning_errno(EBADMSG, "%s is not a snapshot document of version %d, not serving it as the boot phase.",
                                         path, SNAPSHOT_FORMAT_VERSION);
        log_info("Serving the boot phase recorded in %s.", path);
        *ret = TAKE_PTR(doc);
        return 0;
}

/* A user frame without a symbol names its raw address ("[user] 0x7f..."): whose process it was is not
 * known any more, so it reads as for another user's (query.h, QueryUserAddresses). */
static bool is_raw_user_frame(json_t *v) {
        return json_is_string(v) && startswith(json_string_value(v), "[user] 0x");
}

static void hide_addresses(json_t *j) {
        const char *key;
        json_t *v;
        size_t i;

        if (json_is_object(j)) {
                json_object_foreach(j, key, v) {
                        if (streq(key, "address") && !json_is_null(v))
                                (void) json_object_set_new(j, key, json_null());
                        else if (streq(key, "kernelAddressesHidden"))
                                (void) json_object_set_new(j, key, json_true());
                        else if (is_raw_user_frame(v))
                                (void) json_object_set_new(j, key, json_string("[user] [unknown]"));
                        else
                                hide_addresses(v);
                }
        } else if (json_is_array(j))
                json_array_foreach(j, i, v) {
                        if (is_raw_user_frame(v))
                                (void) json_array_set_new(j, i, json_string("[user] [unknown]"));
                        else
                                hide_addresses(v);
                }
}

json_t *boot_phase_for_caller(json_t *doc, bool peer_is_root) {
        if (peer_is_root)
                return json_incref(doc);
        json_t *copy = json_deep_copy(doc);
        if (copy)
                hide_addresses(copy);
        return copy;
}
