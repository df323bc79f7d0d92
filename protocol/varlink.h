/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The varlink wire protocol, shared by memstrackd and memstrackctl: NUL-terminated JSON framing, strict
 * call and reply parsing, reply builders, error names, parameter validation and a small blocking client.
 *
 * No event loop and no logging beyond return codes: callers decide what to log (STYLE.md section 7).
 * jansson ownership rules apply: functions returning json_t * return a new reference the caller must
 * json_decref(); json_t * arguments are borrowed unless the comment says "steals".
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "macro.h"

/* Largest message either side accepts; a longer one is a protocol error that ends the connection. */
#define VARLINK_MESSAGE_SIZE_MAX_DEFAULT (16U * 1024U * 1024U)

/* Standard errors of org.varlink.service; their parameters are {interface}, {method}, {method}, {parameter}. */
#define VARLINK_ERROR_INTERFACE_NOT_FOUND    "org.varlink.service.InterfaceNotFound"
#define VARLINK_ERROR_METHOD_NOT_FOUND       "org.varlink.service.MethodNotFound"
#define VARLINK_ERROR_METHOD_NOT_IMPLEMENTED "org.varlink.service.MethodNotImplemented"
#define VARLINK_ERROR_INVALID_PARAMETER      "org.varlink.service.InvalidParameter"

/* Ours, declared in io.memstrack.varlink with the parameters named in the comments. */
#define MEMSTRACK_ERROR_PERMISSION_DENIED "io.memstrack.PermissionDenied" /* reason: string */
#define MEMSTRACK_ERROR_NO_SUCH_TASK      "io.memstrack.NoSuchTask"       /* pid: int */
#define MEMSTRACK_ERROR_NO_SUCH_MODULE    "io.memstrack.NoSuchModule"     /* name: string */
#define MEMSTRACK_ERROR_NO_SUCH_UNIT      "io.memstrack.NoSuchUnit"       /* name: string */
#define MEMSTRACK_ERROR_NO_SUCH_SNAPSHOT  "io.memstrack.NoSuchSnapshot"   /* name: string */
#define MEMSTRACK_ERROR_NOT_TRACING       "io.memstrack.NotTracing"       /* reason: string */
#define MEMSTRACK_ERROR_LIMIT_EXCEEDED    "io.memstrack.LimitExceeded"    /* limit: string, value: int */
#define MEMSTRACK_ERROR_INTERNAL          "io.memstrack.InternalError"    /* errno: int, message: string */
#define MEMSTRACK_ERROR_TOO_MANY_CONNECTIONS "io.memstrack.TooManyConnections" /* reason: string */

#define VARLINK_SERVICE_INTERFACE "org.varlink.service"
#define MEMSTRACK_INTERFACE       "io.memstrack"

/* Interface descriptions, embedded at build time from protocol/ *.varlink (NUL-terminated text). */
extern const char varlink_interface_org_varlink_service[];
extern const char varlink_interface_io_memstrack[];

/* ---- Framing ---------------------------------------------------------------------------------------- */

/*
 * VarlinkFramer: turns a byte stream into NUL-terminated messages. Bytes go in either by copy
 * (varlink_framer_feed()) or by reading straight into varlink_framer_get_space() followed by
 * varlink_framer_commit(). varlink_framer_next() hands out complete messages in order.
 */
typedef struct VarlinkFramer VarlinkFramer;

/* max_message_bytes: the longest message (without its NUL) accepted; 0 means the 16 MiB default. */
int varlink_framer_new(size_t max_message_bytes, VarlinkFramer **ret);
VarlinkFramer *varlink_framer_free(VarlinkFramer *f);
DEFINE_TRIVIAL_CLEANUP_FUNC(VarlinkFramer *, varlink_framer_free);

/* Copies size bytes in. -EMSGSIZE when the unfinished message would exceed the limit, -ENOMEM. */
int varlink_framer_feed(VarlinkFramer *f, const void *data, size_t size);

/* Returns writable room at the end of the buffer (at least 1 byte, at most what the limit still allows),
 * for recv() to fill; then varlink_framer_commit() with the count read. -EMSGSIZE when the unfinished
 * message already reached the limit (the connection must be dropped), -ENOMEM. */
int varlink_framer_get_space(VarlinkFramer *f, void **ret_buf, size_t *ret_size);
void varlink_framer_commit(VarlinkFramer *f, size_t n);

/* Next complete message. Returns 1 with *ret_message pointing at the NUL-terminated text (borrowed, valid
 * until the next framer call that adds bytes) and *ret_size its length without the NUL; 0 when no complete
 * message is buffered; -EMSGSIZE when a message is longer than the limit. */
int varlink_framer_next(VarlinkFramer *f, const char **ret_message, size_t *ret_size);

/* Bytes buffered that have not been returned as messages yet. */
size_t varlink_framer_pending(const VarlinkFramer *f);

/* ---- Calls ------------------------------------------------------------------------------------------ */

typedef enum VarlinkCallFlags {
        VARLINK_CALL_MORE    = 1 << 0, /* the caller accepts several replies ("continues") */
        VARLINK_CALL_ONEWAY  = 1 << 1, /* the caller wants no reply at all */
        VARLINK_CALL_UPGRADE = 1 << 2, /* protocol upgrade requested (memstrack supports none) */
} VarlinkCallFlags;

typedef struct VarlinkCallMessage {
        char *method;           /* owned, "interface.Method", syntax checked */
        json_t *parameters;     /* owned, always an object ({} when absent or null) */
        VarlinkCallFlags flags;
} VarlinkCallMessage;

void varlink_call_message_done(VarlinkCallMessage *m);

/*
 * Parses one call {method, parameters?, oneway?, more?, upgrade?} strictly. text need not be
 * NUL-terminated and must not contain a NUL.
 * Returns 0 on success. -EBADMSG when the text is not a JSON object (bad syntax, invalid UTF-8, a NUL,
 * duplicate keys): the stream cannot be trusted any more. -EINVAL when it is an object but a member is
 * missing, unknown or of the wrong type, the method name is malformed, oneway and more are both true
 * ("more"), or a number in it is beyond int64_t (an integer) or double (a real): *reterr_key then names
 * the offending member, or for such a number under "parameters" the parameter holding it (malloc'ed, the
 * caller frees it), and *reterr_flags holds the flags that could be read, so a valid "oneway": true still
 * suppresses the error reply. reterr_* may be NULL. -ENOMEM.
 */
int varlink_call_parse(const char *text, size_t size, VarlinkCallMessage *ret, char **reterr_key,
                VarlinkCallFlags *reterr_flags);

/* True for "interface.Method": a valid reverse-domain interface name, a dot, a PascalCase member name. */
bool varlink_method_name_is_valid(const char *name);
/* True for an interface name such as "io.memstrack" (lowercase labels, at least two, '-' inside). */
bool varlink_interface_name_is_valid(const char *name);
/* Splits a valid method name: *ret_interface is a new string, *ret_member points into name. */
int varlink_method_name_split(const char *name, char **ret_interface, const char **ret_member);

/* Builds the serialized call {method, parameters, more?, oneway?} with its NUL terminator. parameters may
 * be NULL ({}). *ret_text is malloc'ed, *ret_size includes the NUL. -EINVAL for a bad method name, for
 * parameters that are no object, and for oneway with more (no server accepts that call). */
int varlink_call_build(const char *method, json_t *parameters, VarlinkCallFlags flags, char **ret_text,
                size_t *ret_size);

/* ---- Replies ---------------------------------------------------------------------------------------- */

/* The reply objects. parameters may be NULL (an empty object is sent: varlink wants an object). */
/* An unsigned count as a varlink int, which is signed: at most COUNT_MAX, never negative. */
static inline json_int_t varlink_count(uint64_t n) {
        return n > COUNT_MAX ? (json_int_t) COUNT_MAX : (json_int_t) n;
}

json_t *varlink_reply_new(json_t *parameters, bool continues);
json_t *varlink_reply_new_error(const char *error, json_t *parameters);

/* Serializes a message compactly and appends the NUL. *ret_size includes the NUL. -ENOMEM, -EINVAL. */
int varlink_message_serialize(json_t *message, char **ret_text, size_t *ret_size);

typedef struct VarlinkReply {
        json_t *parameters;     /* owned, always an object */
        char *error;            /* owned error name, NULL on success */
        bool continues;
} VarlinkReply;

void varlink_reply_done(VarlinkReply *r);

/* Parses one reply {parameters?, continues?, error?}. Members of the wrong type are -EBADMSG; unknown
 * members are ignored (forward compatibility). */
int varlink_reply_parse(const char *text, size_t size, VarlinkReply *ret);

/* Error parameter shortcuts: new references. */
json_t *varlink_error_parameters_invalid_parameter(const char *parameter);

/* ---- Parameter types, from the interface file ------------------------------------------------------ */

/*
 * What an interface file declares a method's parameters to be, as a tree of types that varlink-embed.py
 * writes from the .varlink file itself (one VarlinkSignature per interface): the server checks every
 * call against it, so the interface file is the one place a parameter is declared.
 */
typedef enum VarlinkTypeKind {
        VARLINK_TYPE_BOOL,
        VARLINK_TYPE_INT,
        VARLINK_TYPE_FLOAT,     /* integers are accepted */
        VARLINK_TYPE_STRING,
        VARLINK_TYPE_OBJECT,    /* "object": any JSON object */
        VARLINK_TYPE_ENUM,      /* a string among choices */
        VARLINK_TYPE_STRUCT,    /* an object of exactly these fields (the nullable ones may be left out) */
        VARLINK_TYPE_ARRAY,     /* []element */
        VARLINK_TYPE_MAP,       /* [string]element */
        VARLINK_TYPE_REF,       /* "?Named": element, nullable */
        _VARLINK_TYPE_KIND_MAX,
} VarlinkTypeKind;

typedef struct VarlinkType VarlinkType;

typedef struct VarlinkTypeField {
        const char *name;
        const VarlinkType *type;
} VarlinkTypeField;

struct VarlinkType {
        VarlinkTypeKind kind;
        bool nullable;                  /* "?type": null, or absent from a struct */
        const char *const *choices;     /* ENUM: NULL-terminated */
        const VarlinkType *element;     /* ARRAY, MAP, REF */
        const VarlinkTypeField *fields; /* STRUCT */
        size_t n_fields;
};

typedef struct VarlinkMethodSignature {
        const char *name;               /* "io.memstrack.Tasks" */
        const VarlinkType *parameters;  /* a STRUCT */
} VarlinkMethodSignature;

typedef struct VarlinkSignature {
        const VarlinkMethodSignature *methods;
        size_t n_methods;
} VarlinkSignature;

const VarlinkMethodSignature *varlink_signature_find(const VarlinkSignature *s, const char *method);
/* The declared type of a method's parameter, NULL if it has none of that name. */
const VarlinkType *varlink_method_parameter_type(const VarlinkMethodSignature *m, const char *name);

/*
 * Checks a call's parameters (an object) against its method's declared ones: unknown members, values of
 * the wrong type (at any depth), strings outside an enum and missing non-nullable members give -EINVAL
 * with *reterr_parameter naming the parameter, ready for InvalidParameter (borrowed from the signature or
 * the parameters, valid while both live).
 */
int varlink_parameters_check(json_t *parameters, const VarlinkMethodSignature *m, const char **reterr_parameter);

/* ---- Client ----------------------------------------------------------------------------------------- */

/* A blocking varlink client on one connection, for memstrackctl and tests. */
typedef struct VarlinkClient VarlinkClient;

/* Turns "unix:/path", "unix:/path;mode=0600", "/path" or "./path" into a socket path (malloc'ed).
 * "unix:@name" gives "@name" (abstract). -EINVAL for other forms. */
int varlink_address_to_path(const char *address, char **ret_path);

int varlink_client_connect(const char *address, VarlinkClient **ret);
/* Wraps a connected stream socket; takes the fd even on failure. */
int varlink_client_new_from_fd(int fd, VarlinkClient **ret);
VarlinkClient *varlink_client_free(VarlinkClient *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(VarlinkClient *, varlink_client_free);

/* The socket, for polling in an event loop (it is non-blocking). */
int varlink_client_get_fd(const VarlinkClient *c);

/* Sends one call, waiting up to timeout_usec (UINT64_MAX: forever) for the socket to take it. */
int varlink_client_send(VarlinkClient *c, const char *method, json_t *parameters, VarlinkCallFlags flags,
                uint64_t timeout_usec);

/*
 * Reads the next reply, waiting up to timeout_usec (0: only what can be read now; UINT64_MAX: forever).
 * Returns 0 for a final reply, 1 for a non-final one (continues: more follow), -EAGAIN when timeout_usec
 * is 0 and no full reply is there yet, -ETIMEDOUT, -ECONNRESET when the server closed the connection,
 * -EBADMSG for a malformed reply, -EMSGSIZE. On an error reply *ret_error is the error name (the caller
 * frees it) and *ret_parameters its parameters; else *ret_error is NULL. Both out pointers are required.
 */
int varlink_client_read_reply(VarlinkClient *c, uint64_t timeout_usec, json_t **ret_parameters,
                char **ret_error);

/* send + one read_reply. Same returns as varlink_client_read_reply(). When the server closed the connection
 * before the call went out, a reply it left (io.memstrack.TooManyConnections) is still returned. */
int varlink_client_call(VarlinkClient *c, const char *method, json_t *parameters, uint64_t timeout_usec,
                json_t **ret_parameters, char **ret_error);
