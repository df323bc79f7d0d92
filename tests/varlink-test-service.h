/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The io.memstrack.test methods on the generic varlink server, shared by the in-process server tests
 * (test-varlink-server.c) and the standalone varlink-test-server used with independent clients.
 */

#include <stdint.h>

#include <systemd/sd-event.h>

#include "varlink-server.h"

extern const char varlink_interface_io_memstrack_test[];
extern const VarlinkSignature varlink_signature_io_memstrack_test;

typedef struct TestStream TestStream;

typedef struct TestService {
        sd_event *event;                /* borrowed */
        VarlinkServer *server;          /* borrowed, set once the server exists (for Stats) */
        TestStream *streams;            /* open Stream calls, owned */
        uint64_t streams_completed;
        uint64_t streams_aborted;
} TestService;

/* Fills the interface and method tables, the error names and userdata of cfg; other fields are left alone. */
void test_service_fill_config(TestService *t, VarlinkServerConfig *cfg);
