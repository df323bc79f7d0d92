/* SPDX-License-Identifier: MIT */

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "json-overflow.h"
#include "macro.h"
#include "varlink.h"

/* recv() granularity: big enough for most messages in one read, small enough to bound the work per read. */
#define FRAMER_READ_CHUNK (64U * 1024U)
/* Buffer kept between messages; a bigger one (left by a big message) is freed once empty. */
#define FRAMER_KEEP_BYTES (256U * 1024U)

struct VarlinkFramer {
        char *buf;
        size_t alloc;
        size_t start;           /* first byte not handed out yet */
        size_t end;             /* end of the buffered bytes */
        size_t searched;        /* [start, searched) is known to hold no NUL (varlink_framer_next()) */
        size_t tail_scanned;    /* [0, tail_scanned) was scanned for the last NUL (tail accounting) */
        size_t tail_start;      /* just after the last NUL seen: where the unfinished message begins */
        size_t max_message;
};

int varlink_framer_new(size_t max_message_bytes, VarlinkFramer **ret) {
        VarlinkFramer *f;

        assert(ret);

        f = calloc(1, sizeof(*f));
        if (!f)
                return -ENOMEM;
        f->max_message = max_message_bytes > 0 ? max_message_bytes : VARLINK_MESSAGE_SIZE_MAX_DEFAULT;
        *ret = f;
        return 0;
}

VarlinkFramer *varlink_framer_free(VarlinkFramer *f) {
        if (!f)
                return NULL;
        free(f->buf);
        free(f);
        return NULL;
}

size_t varlink_framer_pending(const VarlinkFramer *f) {
        assert(f);
        return f->end - f->start;
}

/* Moves the unconsumed bytes to the front so the buffer never grows because of consumed ones. */
static void framer_compact(VarlinkFramer *f) {
        size_t s = f->start;

        if (s == 0)
                return;
        memmove(f->buf, f->buf + s, f->end - s);
        f->end -= s;
        f->searched -= s;
        f->tail_scanned = f->tail_scanned > s ? f->tail_scanned - s : 0;
        f->tail_start = f->tail_start > s ? f->tail_start - s : 0;
        f->start = 0;
}

static int framer_reserve(VarlinkFramer *f, size_t room) {
        size_t need, n;
        char *p;

        /* Empty after a big message: give the memory back instead of keeping it for the connection's
         * lifetime. Messages handed out before are invalid from here on anyway. */
        if (f->start == f->end && f->alloc > FRAMER_KEEP_BYTES) {
                free(f->buf);
                *f = (VarlinkFramer) { .max_message = f->max_message };
        }
        framer_compact(f);
        if (room > SIZE_MAX - f->end)
                return -ENOMEM;
        need = f->end + room;
        if (need <= f->alloc)
                return 0;

        n = MAX(f->alloc, (size_t) 4096);
        while (n < need)
                n = n > SIZE_MAX / 2 ? need : n * 2;
        p = realloc(f->buf, n);
        if (!p)
                return -ENOMEM;
        f->buf = p;
        f->alloc = n;
        return 0;
}

/* Length of the message still being received: the bytes after the last NUL. Each byte is scanned once. */
static size_t framer_tail(VarlinkFramer *f) {
        if (f->tail_scanned < f->end) {
                const char *p = memrchr(f->buf + f->tail_scanned, 0, f->end - f->tail_scanned);

                if (p)
                        f->tail_start = (size_t) (p - f->buf) + 1;
                f->tail_scanned = f->end;
        }
        return f->end - MAX(f->tail_start, f->start);
}

int varlink_framer_feed(VarlinkFramer *f, const void *data, size_t size) {
        int r;

        assert(f);
        assert(data || size == 0);

        if (size == 0)
                return 0;
        r = framer_reserve(f, size);
        if (r < 0)
                return r;
        memcpy(f->buf + f->end, data, size);
        f->end += size;

        /* A message that can no longer fit (the NUL counts as one byte beyond the limit). */
        if (framer_tail(f) > f->max_message)
                return -EMSGSIZE;
        return 0;
}

int varlink_framer_get_space(VarlinkFramer *f, void **ret_buf, size_t *ret_size) {
        size_t tail, room;
        int r;

        assert(f);
        assert(ret_buf);
        assert(ret_size);

        tail = framer_tail(f);
        if (tail > f->max_message)
                return -EMSGSIZE;

        /* Never read more than the limit still allows (+1 for the terminating NUL): memory stays bounded
         * by the limit even for a peer that never sends a NUL. */
        room = MIN((size_t) FRAMER_READ_CHUNK, f->max_message - tail + 1);
        r = framer_reserve(f, room);
        if (r < 0)
                return r;

        *ret_buf = f->buf + f->end;
        *ret_size = room;
        return 0;
}

void varlink_framer_commit(VarlinkFramer *f, size_t n) {
        assert(f);
        assert(n <= f->alloc - f->end);
        f->end += n;
}

int varlink_framer_next(VarlinkFramer *f, const char **ret_message, size_t *ret_size) {
        const char *nul;
        size_t len;

        assert(f);
        assert(ret_message);
        assert(ret_size);

        if (f->searched < f->start)
                f->searched = f->start;
        nul = f->end > f->searched ? memchr(f->buf + f->searched, 0, f->end - f->searched) : NULL;
        if (!nul) {
                f->searched = f->end;
                if (f->end - f->start > f->max_message)
                        return -EMSGSIZE;
                return 0;
        }

        len = (size_t) (nul - (f->buf + f->start));
        if (len > f->max_message)
                return -EMSGSIZE;

        *ret_message = f->buf + f->start;
        *ret_size = len;
        f->start += len + 1;
        f->searched = f->start;
        return 1;
}

/* ---- Names ------------------------------------------------------------------------------------------ */

static bool char_is_alpha(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool char_is_alnum(char c) {
        return char_is_alpha(c) || (c >= '0' && c <= '9');
}

/* The varlink spec: [A-Za-z]([-]*[A-Za-z0-9])*(\.[A-Za-z0-9]([-]*[A-Za-z0-9])*)+ over [start, end). */
static bool interface_name_is_valid_n(const char *s, size_t n) {
        size_t labels = 0, i = 0;

        if (n == 0 || !char_is_alpha(s[0]))
                return false;

        while (i < n) {
                /* Each label starts with an alphanumeric and does not end with '-'. */
                if (!char_is_alnum(s[i]))
                        return false;
                while (i < n && s[i] != '.') {
                        if (s[i] == '-') {
                                while (i < n && s[i] == '-')
                                        i++;
                                if (i >= n || !char_is_alnum(s[i]))
                                        return false;
                        } else if (!char_is_alnum(s[i]))
                                return false;
                        i++;
                }
                labels++;
                if (i < n) {
                        i++; /* the dot */
                        if (i >= n)
                                return false;
                }
        }
        return labels >= 2;
}

bool varlink_interface_name_is_valid(const char *name) {
        return name && interface_name_is_valid_n(name, strlen(name));
}

static bool member_name_is_valid(const char *s) {
        if (!s || !(s[0] >= 'A' && s[0] <= 'Z'))
                return false;
        for (s++; *s; s++)
                if (!char_is_alnum(*s))
                        return false;
        return true;
}

bool varlink_method_name_is_valid(const char *name) {
        const char *dot;

        if (!name)
                return false;
        dot = strrchr(name, '.');
        if (!dot)
                return false;
        return interface_name_is_valid_n(name, (size_t) (dot - name)) && member_name_is_valid(dot + 1);
}

int varlink_method_name_split(const char *name, char **ret_interface, const char **ret_member) {
        const char *dot;
        char *iface;

        assert(ret_interface);
        assert(ret_member);

        if (!varlink_method_name_is_valid(name))
                return -EINVAL;
        dot = strrchr(name, '.');
        iface = strndup(name, (size_t) (dot - name));
        if (!iface)
                return -ENOMEM;
        *ret_interface = iface;
        *ret_member = dot + 1;
        return 0;
}

/* ---- Calls ------------------------------------------------------------------------------------------ */

void varlink_call_message_done(VarlinkCallMessage *m) {
        if (!m)
                return;
        free(m->method);
        m->method = NULL;
        json_decref(m->parameters);
        m->parameters = NULL;
        m->flags = 0;
}

static int call_flag(json_t *v, const char *key, VarlinkCallFlags flag, VarlinkCallFlags *flags,
                const char **bad) {
        if (!json_is_boolean(v)) {
                if (!*bad)
                        *bad = key;
                return 0;
        }
        if (json_is_true(v))
                *flags |= flag;
        return 0;
}

int varlink_call_parse(const char *text, size_t size, VarlinkCallMessage *ret, char **reterr_key,
                VarlinkCallFlags *reterr_flags) {
        json_auto_t *j = NULL;
        json_t *method = NULL, *parameters = NULL, *v;
        VarlinkCallFlags flags = 0;
        const char *key, *bad = NULL;
        _cleanup_free_ char *m = NULL, *overflow = NULL;
        json_error_t error;

        assert(text || size == 0);
        assert(ret);

        /* jansson would stop at an embedded NUL only with JSON_ALLOW_NUL; refuse it outright so no C
         * string derived from the message can be silently truncated. */
        if (size == 0 || memchr(text, 0, size))
                return -EBADMSG;

        /* Invalid UTF-8, bad syntax, trailing garbage, "\u0000" and duplicate keys all fail here. */
        j = json_loadb(text, size, JSON_REJECT_DUPLICATES, &error);
        if (!j && json_error_code(&error) == json_error_numeric_overflow) {
                /* A number beyond int64_t or double is a bad parameter, not a broken stream: read the rest
                 * of the call without it, to answer InvalidParameter (or nothing, if oneway). */
                _cleanup_free_ char *copy = NULL;
                int r = json_overflow_scan(text, size, &copy, &overflow);
                if (r == -ENOMEM)
                        return r;
                if (r > 0)
                        j = json_loads(copy, JSON_REJECT_DUPLICATES, &error);
        }
        if (!j || !json_is_object(j))
                return -EBADMSG;

        json_object_foreach(j, key, v) {
                if (streq(key, "method")) {
                        if (json_is_string(v))
                                method = v;
                        else if (!bad)
                                bad = "method";
                } else if (streq(key, "parameters")) {
                        /* null is what some bindings (Go's) send for "no parameters". */
                        if (json_is_object(v))
                                parameters = v;
                        else if (!json_is_null(v) && !bad)
                                bad = "parameters";
                } else if (streq(key, "oneway"))
                        (void) call_flag(v, "oneway", VARLINK_CALL_ONEWAY, &flags, &bad);
                else if (streq(key, "more"))
                        (void) call_flag(v, "more", VARLINK_CALL_MORE, &flags, &bad);
                else if (streq(key, "upgrade"))
                        (void) call_flag(v, "upgrade", VARLINK_CALL_UPGRADE, &flags, &bad);
                else if (!bad)
                        bad = key;
        }

        if (overflow)
                bad = overflow;
        if (!bad && !method)
                bad = "method";
        if (!bad && !varlink_method_name_is_valid(json_string_value(method)))
                bad = "method";
        /* "No reply" and "several replies" at once: a oneway stream would hold the connection, silent and
         * past every deadline, and the calls behind it would never be read. Refused like any invalid
         * call, which for a oneway call means without a reply (docs/protocol.md, "Wire format"). */
        if (!bad && (flags & VARLINK_CALL_ONEWAY) && (flags & VARLINK_CALL_MORE))
                bad = "more";
        if (bad) {
                if (reterr_key) {
                        char *k = strdup(bad);
                        if (!k)
                                return -ENOMEM;
                        *reterr_key = k;
                }
                if (reterr_flags)
                        *reterr_flags = flags;
                return -EINVAL;
        }

        m = strdup(json_string_value(method));
        if (!m)
                return -ENOMEM;
        if (parameters)
                json_incref(parameters);
        else {
                parameters = json_object();
                if (!parameters)
                        return -ENOMEM;
        }

        *ret = (VarlinkCallMessage) {
                .method = TAKE_PTR(m),
                .parameters = parameters,
                .flags = flags,
        };
        return 0;
}

int varlink_call_build(const char *method, json_t *parameters, VarlinkCallFlags flags, char **ret_text,
                size_t *ret_size) {
        json_auto_t *j = NULL;

        assert(method);

        if (!varlink_method_name_is_valid(method))
                return -EINVAL;
        if (parameters && !json_is_object(parameters))
                return -EINVAL;
        if ((flags & VARLINK_CALL_ONEWAY) && (flags & VARLINK_CALL_MORE))
                return -EINVAL;

        /* "o" steals the reference, also when packing fails. */
        j = json_pack("{s:s, s:o}", "method", method, "parameters",
                        parameters ? json_incref(parameters) : json_object());
        if (!j)
                return -ENOMEM;
        if ((flags & VARLINK_CALL_MORE) && json_object_set_new(j, "more", json_true()) < 0)
                return -ENOMEM;
        if ((flags & VARLINK_CALL_ONEWAY) && json_object_set_new(j, "oneway", json_true()) < 0)
                return -ENOMEM;
        if ((flags & VARLINK_CALL_UPGRADE) && json_object_set_new(j, "upgrade", json_true()) < 0)
                return -ENOMEM;

        return varlink_message_serialize(j, ret_text, ret_size);
}

/* ---- Replies ---------------------------------------------------------------------------------------- */

static json_t *parameters_or_empty(json_t *parameters) {
        return parameters ? json_incref(parameters) : json_object();
}

json_t *varlink_reply_new(json_t *parameters, bool continues) {
        json_auto_t *j = NULL;
        json_t *p;

        assert(!parameters || json_is_object(parameters));

        j = json_object();
        p = parameters_or_empty(parameters);
        if (!j || !p || json_object_set_new(j, "parameters", p) < 0)
                return NULL;
        if (continues && json_object_set_new(j, "continues", json_true()) < 0)
                return NULL;
        return TAKE_PTR(j);
}

json_t *varlink_reply_new_error(const char *error, json_t *parameters) {
        json_auto_t *j = NULL;
        json_t *p;

        assert(error);
        assert(!parameters || json_is_object(parameters));

        j = json_object();
        p = parameters_or_empty(parameters);
        if (!j || !p || json_object_set_new(j, "parameters", p) < 0)
                return NULL;
        if (json_object_set_new(j, "error", json_string(error)) < 0)
                return NULL;
        return TAKE_PTR(j);
}

json_t *varlink_error_parameters_invalid_parameter(const char *parameter) {
        return json_pack("{s:s}", "parameter", parameter ? parameter : "");
}

int varlink_message_serialize(json_t *message, char **ret_text, size_t *ret_size) {
        char *s;
        size_t n;

        assert(ret_text);
        assert(ret_size);

        if (!json_is_object(message))
                return -EINVAL;

        /* JSON_COMPACT never emits a raw NUL: strings with U+0000 are escaped as \u0000. */
        s = json_dumps(message, JSON_COMPACT);
        if (!s)
                return -ENOMEM;
        n = strlen(s);
        /* json_dumps() allocated n + 1 bytes: the terminating NUL is the frame delimiter. */
        *ret_text = s;
        *ret_size = n + 1;
        return 0;
}

void varlink_reply_done(VarlinkReply *r) {
        if (!r)
                return;
        json_decref(r->parameters);
        r->parameters = NULL;
        free(r->error);
        r->error = NULL;
        r->continues = false;
}

int varlink_reply_parse(const char *text, size_t size, VarlinkReply *ret) {
        json_auto_t *j = NULL;
        json_t *parameters, *continues, *error;
        _cleanup_free_ char *e = NULL;
        json_error_t err;

        assert(text || size == 0);
        assert(ret);

        if (size == 0 || memchr(text, 0, size))
                return -EBADMSG;
        j = json_loadb(text, size, JSON_REJECT_DUPLICATES, &err);
        if (!j || !json_is_object(j))
                return -EBADMSG;

        parameters = json_object_get(j, "parameters");
        continues = json_object_get(j, "continues");
        error = json_object_get(j, "error");
        if (parameters && !json_is_object(parameters) && !json_is_null(parameters))
                return -EBADMSG;
        if (continues && !json_is_boolean(continues))
                return -EBADMSG;
        if (error && !json_is_string(error))
                return -EBADMSG;

        if (error) {
                e = strdup(json_string_value(error));
                if (!e)
                        return -ENOMEM;
        }

        *ret = (VarlinkReply) {
                .parameters = json_is_object(parameters) ? json_incref(parameters) : json_object(),
                .error = TAKE_PTR(e),
                .continues = json_is_true(continues),
        };
        if (!ret->parameters) {
                varlink_reply_done(ret);
                return -ENOMEM;
        }
        return 0;
}

/* ---- Parameter types, from the interface file ------------------------------------------------------ */

const VarlinkMethodSignature *varlink_signature_find(const VarlinkSignature *s, const char *method) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_methods; i++)
                if (streq(s->methods[i].name, method))
                        return s->methods + i;
        return NULL;
}

static const VarlinkTypeField *struct_field(const VarlinkType *t, const char *name) {
        for (size_t i = 0; i < t->n_fields; i++)
                if (streq(t->fields[i].name, name))
                        return t->fields + i;
        return NULL;
}

const VarlinkType *varlink_method_parameter_type(const VarlinkMethodSignature *m, const char *name) {
        const VarlinkTypeField *f = struct_field(m->parameters, name);
        return f ? f->type : NULL;
}

static bool string_in_choices(const char *s, const char *const *choices) {
        for (; *choices; choices++)
                if (streq(*choices, s))
                        return true;
        return false;
}

/* Nesting deeper than this is refused rather than followed: a recursive type meets a deep document. */
#define VARLINK_TYPE_DEPTH_MAX 32

static bool value_is(json_t *v, const VarlinkType *t, unsigned depth);

/* Whether v is an object of t's fields; if not, *reterr_member (if not NULL) names the member that is
 * wrong. Unknown members first: a misspelt optional one must not be silently ignored. */
static bool struct_is(json_t *v, const VarlinkType *t, unsigned depth, const char **reterr_member) {
        const char *key, *bad = NULL;
        json_t *member;

        if (!json_is_object(v))
                return false;
        json_object_foreach(v, key, member)
                if (!struct_field(t, key)) {
                        bad = key;
                        goto fail;
                }
        for (size_t i = 0; i < t->n_fields; i++)
                if (!value_is(json_object_get(v, t->fields[i].name), t->fields[i].type, depth + 1)) {
                        bad = t->fields[i].name;
                        goto fail;
                }
        return true;
fail:
        if (reterr_member)
                *reterr_member = bad;
        return false;
}

/* Whether v (NULL: absent) is a value of type t. */
static bool value_is(json_t *v, const VarlinkType *t, unsigned depth) {
        const char *key;
        json_t *item;
        size_t i;

        if (!v || json_is_null(v))
                return t->nullable;
        if (depth > VARLINK_TYPE_DEPTH_MAX)
                return false;
        switch (t->kind) {
        case VARLINK_TYPE_BOOL:
                return json_is_boolean(v);
        case VARLINK_TYPE_INT:
                return json_is_integer(v);
        case VARLINK_TYPE_FLOAT:
                return json_is_number(v);
        case VARLINK_TYPE_STRING:
                return json_is_string(v);
        case VARLINK_TYPE_OBJECT:
                return json_is_object(v);
        case VARLINK_TYPE_ENUM:
                return json_is_string(v) && string_in_choices(json_string_value(v), t->choices);
        case VARLINK_TYPE_STRUCT:
                return struct_is(v, t, depth, NULL);
        case VARLINK_TYPE_ARRAY:
                if (!json_is_array(v))
                        return false;
                json_array_foreach(v, i, item)
                        if (!value_is(item, t->element, depth + 1))
                                return false;
                return true;
        case VARLINK_TYPE_MAP:
                if (!json_is_object(v))
                        return false;
                json_object_foreach(v, key, item)
                        if (!value_is(item, t->element, depth + 1))
                                return false;
                return true;
        case VARLINK_TYPE_REF:
                return value_is(v, t->element, depth + 1);
        default:
                assert(!"unknown VarlinkTypeKind");
                return false;
        }
}

int varlink_parameters_check(json_t *parameters, const VarlinkMethodSignature *m, const char **reterr_parameter) {
        const char *bad = "parameters";       /* not an object at all */

        assert(m->parameters->kind == VARLINK_TYPE_STRUCT);

        if (struct_is(parameters, m->parameters, 0, &bad))
                return 0;
        if (reterr_parameter)
                *reterr_parameter = bad;
        return -EINVAL;
}
