/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * One kernel frame as text, the way %pS and %pSb print it: "func+0xoff/0xsize [module buildid]", every
 * part after func optional, or a bare "0xaddr" for what the kernel could not name. The grammar only:
 * ksym.c looks the parts up in a symbol table, page-owner.c names another machine's frames with them.
 */
typedef struct FrameText {
        bool raw;                       /* a bare address: address; name spans its text */
        uint64_t address;
        const char *name;               /* borrowed from the text, name_len bytes, not terminated */
        size_t name_len;
        uint64_t offset;
        uint64_t size;                  /* 0: not stated */
        const char *module;             /* borrowed, module_len bytes; NULL: the kernel image */
        size_t module_len;
} FrameText;

/* Blanks around the frame are allowed. -EINVAL when text is not one frame, -ERANGE when a number does
 * not fit or the offset lies at or past the stated size (the text contradicts itself). */
int frame_text_parse(const char *text, FrameText *ret);

/* "function+0x1a" -> "function": the frame's function without its offset, as a flame graph or a pprof
 * Function names it; a frame without one ("[all]", "[user] 0x7f...", a name with a '+' of its own) is
 * copied as it is, NULL as "". New string, NULL on OOM. */
char *frame_text_function_name(const char *frame);
