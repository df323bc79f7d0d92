/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The Explain reply (io.memstrack.varlink) as text: the kernel's figures of a unit's cgroup, what memstrack
 * attributes to it beside them, who holds it (live processes, and no live process), and why the two
 * differ. memstrackctl explain prints it, and so does the explain report format, from the same reply.
 */

#include <stdio.h>

#include <jansson.h>

/* Writes the reply (borrowed) to f. Names, frames and paths are sanitized for a terminal. -ENOMEM, -EIO. */
int explain_render_text(const json_t *reply, FILE *f);
