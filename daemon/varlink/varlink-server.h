/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A generic varlink server on sd-event: listening socket, access control from SO_PEERCRED, framing,
 * limits, org.varlink.service, and dispatch of calls to a method table. It knows nothing about memory
 * accounting nor any interface but org.varlink.service: the caller names its interfaces, methods, the
 * errors the server sends on its behalf and where to listen (memstrackd registers io.memstrack through
 * daemon/api/service.c, tests register io.memstrack.test).
 *
 * Per connection, calls are answered strictly in order: the next call is read only once the current one
 * got its final reply (a "more" stream delays the calls pipelined behind it). Oneway calls never get a
 * reply, not even an error. Every failure caused by a client closes that client's connection at most;
 * the server keeps serving the others.
 *
 * Clients cannot hold slots or memory for free: deadlines close connections that stay silent, trickle,
 * idle or leave output unread; a newcomer finding the table full evicts the oldest silent connection or
 * is refused with the caller's TooManyConnections error; requests and all queued output have caps (see
 * VarlinkServerConfig and docs/protocol.md, Limits).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <systemd/sd-event.h>

#include <jansson.h>

#include "macro.h"
#include "varlink.h"

#define VARLINK_SERVER_MAX_CONNECTIONS_DEFAULT         64U
#define VARLINK_SERVER_MAX_CONNECTIONS_PER_UID_DEFAULT 16U
/* Slots at the top of max_connections that only root may take. */
#define VARLINK_SERVER_ROOT_RESERVED_CONNECTIONS       1U
/* Requests are small (the largest legitimate io.memstrack call is well under 1 KiB); 64 KiB leaves room
 * and keeps what hostile peers can make the server buffer small (see docs/protocol.md, Limits). */
#define VARLINK_SERVER_MAX_REQUEST_BYTES_DEFAULT       (64U * 1024U)
#define VARLINK_SERVER_MAX_OUTPUT_BYTES_DEFAULT        (32U * 1024U * 1024U)
#define VARLINK_SERVER_MAX_TOTAL_OUTPUT_BYTES_DEFAULT  (64U * 1024U * 1024U)
#define VARLINK_SERVER_FIRST_MESSAGE_TIMEOUT_USEC_DEFAULT (5U * 1000000U)
#define VARLINK_SERVER_REQUEST_TIMEOUT_USEC_DEFAULT    (10U * 1000000U)
#define VARLINK_SERVER_IDLE_TIMEOUT_USEC_DEFAULT       (5U * 60U * 1000000U)
#define VARLINK_SERVER_OUTPUT_TIMEOUT_USEC_DEFAULT     (30U * 1000000U)
#define VARLINK_SERVER_SOCKET_MODE_DEFAULT             0660

typedef struct VarlinkServer VarlinkServer;
/* One call in progress. Owned by its connection; valid from the handler's invocation until its final
 * reply/error, or until its disconnect callback ran. */
typedef struct VarlinkCall VarlinkCall;

/*
 * A method handler. parameters is the call's parameter object (borrowed, valid while the call is).
 * Reply with varlink_call_reply()/varlink_call_error() before returning, or keep the call and reply later
 * (from a timer, for a "more" stream). Returns 0, or -errno: if the call was not answered yet it gets the
 * caller's internal error (VarlinkServerErrors).
 */
typedef int (*VarlinkMethodHandler)(VarlinkCall *call, json_t *parameters, void *userdata);

/* Called when a call is dropped before its final reply (client gone, limit hit, server freed). The call
 * is freed right after: forget the pointer (stop the timer feeding it). */
typedef void (*VarlinkCallDisconnectHandler)(VarlinkCall *call, void *userdata);

typedef enum VarlinkMethodFlags {
        VARLINK_METHOD_ROOT_ONLY = 1 << 0, /* PermissionDenied for group members */
} VarlinkMethodFlags;

typedef struct VarlinkMethod {
        const char *name;               /* "io.memstrack.Tasks" */
        VarlinkMethodHandler handler;
        VarlinkMethodFlags flags;
} VarlinkMethod;

typedef struct VarlinkInterface {
        const char *name;               /* "io.memstrack" */
        const char *description;        /* the IDL text served by GetInterfaceDescription */
        const VarlinkSignature *signature; /* its methods' parameters, from the same file (varlink-embed.py) */
} VarlinkInterface;

/* The interface the server implements itself, from org.varlink.service.varlink. */
extern const VarlinkSignature varlink_signature_org_varlink_service;

/* The errors the server sends by itself, named in the caller's interface (all required, e.g.
 * "io.memstrack.PermissionDenied"). Their parameters are fixed: */
typedef struct VarlinkServerErrors {
        const char *permission_denied;  /* {reason}: not root nor in the group, or a root-only method */
        const char *too_many_connections; /* {reason}: refused or evicted for lack of a slot */
        const char *limit_exceeded;     /* {limit: "messageSize", value}: a reply over max_message_bytes */
        const char *internal;           /* {errno, message}: a handler failed without answering */
} VarlinkServerErrors;

/*
 * Zero means "the default" for every field but errors and socket_path. Strings are copied; the interface and method tables are
 * borrowed and must outlive the server (they are static in practice).
 */
typedef struct VarlinkServerConfig {
        const char *socket_path;        /* required, unless a socket-activated fd is passed (then ignored) */
        unsigned socket_mode;           /* 0660 */
        const char *group;              /* allowed group; NULL or "" for root only */
        size_t max_message_bytes;       /* 16 MiB: the longest reply (LimitExceeded instead) */
        size_t max_request_bytes;       /* 64 KiB: the longest incoming message, else disconnect */
        unsigned max_connections;       /* 64, the last VARLINK_SERVER_ROOT_RESERVED_CONNECTIONS for root */
        unsigned max_connections_per_uid; /* 16 for each uid but root; so one user cannot take every slot */
        size_t max_output_bytes;        /* 32 MiB queued for a client that does not read: then disconnect */
        size_t max_total_output_bytes;  /* 64 MiB queued for all clients: then the biggest backlog goes */
        /* Deadlines; UINT64_MAX: never. A connection is closed when it has not sent a complete message
         * this long after it was accepted (first_message), when a message it started is not complete
         * this long after its first byte (request), when it sent nothing since its last message or call
         * ended (idle; never while a call is open), or when output stayed queued for it without the
         * queue running empty once (output; streams included). */
        uint64_t first_message_timeout_usec; /* 5 s */
        uint64_t request_timeout_usec;  /* 10 s */
        uint64_t idle_timeout_usec;     /* 5 min */
        uint64_t output_timeout_usec;   /* 30 s */
        /* sd-event priority of all the server's sources; the owner puts more urgent work (draining
         * the kernel's rings) at a smaller value. 0: SD_EVENT_PRIORITY_NORMAL. */
        int64_t priority;

        const char *vendor, *product, *version, *url; /* for org.varlink.service.GetInfo; NULL: "" */
        VarlinkServerErrors errors;

        const VarlinkInterface *interfaces; /* besides org.varlink.service, which is built in */
        size_t n_interfaces;
        const VarlinkMethod *methods;
        size_t n_methods;
        void *userdata;                 /* passed to every handler and hook */
        /* Run before every handler, once the call's parameters are known good (e.g. to bring what the
         * methods answer about up to date). */
        void (*before_call)(void *userdata);
        /* A handler returned -errno without answering: reply with the interface's error for it and
         * return 0, or return the errno for the internal error. */
        int (*reply_errno)(VarlinkCall *call, int error, void *userdata);
} VarlinkServerConfig;

/*
 * Starts serving on e: takes the socket-activated fd if LISTEN_FDS passes exactly one listening
 * AF_UNIX stream socket (beside sockets of other types, for others), else binds socket_path (creating its directory 0755, replacing a stale socket,
 * refusing if another server answers there: -EADDRINUSE). The group is resolved once, here: a missing
 * group means root only (logged). -EINVAL for a bad table, missing error names, or no socket path
 * without an activated fd; -errno on failure, logged at debug; the caller logs once.
 */
int varlink_server_new(sd_event *e, const VarlinkServerConfig *cfg, VarlinkServer **ret);
/* Closes every connection (calling pending disconnect handlers), the listening socket, and removes the
 * socket file if this server created it. Takes NULL, returns NULL. */
VarlinkServer *varlink_server_free(VarlinkServer *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(VarlinkServer *, varlink_server_free);

unsigned varlink_server_n_connections(const VarlinkServer *s);
/* Bytes allocated for queued output, over all connections (bounded by max_total_output_bytes). */
size_t varlink_server_output_bytes(const VarlinkServer *s);
/* The path bound, or NULL when socket-activated. */
const char *varlink_server_get_socket_path(const VarlinkServer *s);

/*
 * Replies. params (borrowed, may be NULL for {}) must be an object.
 * varlink_call_reply() and varlink_call_error() end the call: the pointer is invalid afterwards.
 * varlink_call_reply_more() sends a non-final reply ("continues": true) and needs a "more" call
 * (-EINVAL otherwise; check varlink_call_wants_more()). For oneway calls nothing is sent but the calls
 * still end. A reply larger than max_message_bytes is replaced by errors.limit_exceeded and ends
 * the call. Returns 0, -ENOMEM, or -ECONNRESET when the connection is being dropped (the call stays
 * valid until its disconnect handler ran).
 */
int varlink_call_reply(VarlinkCall *call, json_t *params);
int varlink_call_reply_more(VarlinkCall *call, json_t *params);
int varlink_call_error(VarlinkCall *call, const char *error, json_t *params);
/* InvalidParameter {parameter}. */
int varlink_call_error_invalid_parameter(VarlinkCall *call, const char *parameter);

void varlink_call_set_disconnect_handler(VarlinkCall *call, VarlinkCallDisconnectHandler handler,
                void *userdata);

const char *varlink_call_get_method(const VarlinkCall *call);
bool varlink_call_wants_more(const VarlinkCall *call);
bool varlink_call_is_oneway(const VarlinkCall *call);
/* The peer at connect time (SO_PEERCRED). Only root sees raw kernel addresses. */
bool varlink_call_peer_is_root(const VarlinkCall *call);

/*
 * The call's parameters, read after the server checked them against the interface file: each is of its
 * declared type, so these only read. A name the method does not declare (or of another type) is a bug and
 * asserts. Absent and null are the same: the given default, NULL or false.
 */
bool varlink_call_declares_parameter(const VarlinkCall *call, const char *name); /* never asserts */
bool varlink_call_has_parameter(VarlinkCall *call, const char *name);
int64_t varlink_call_parameter_int(VarlinkCall *call, const char *name, int64_t absent);
bool varlink_call_parameter_bool(VarlinkCall *call, const char *name, bool absent);
const char *varlink_call_parameter_string(VarlinkCall *call, const char *name); /* strings and enums */
json_t *varlink_call_parameter_json(VarlinkCall *call, const char *name);       /* borrowed */
uid_t varlink_call_get_peer_uid(const VarlinkCall *call);
pid_t varlink_call_get_peer_pid(const VarlinkCall *call);
void *varlink_call_get_userdata(const VarlinkCall *call);
/* Bytes queued on the call's connection that the client did not read yet: a stream skips an update
 * while this is not 0, so a slow or absent reader costs neither memory nor work. */
size_t varlink_call_output_pending(const VarlinkCall *call);
