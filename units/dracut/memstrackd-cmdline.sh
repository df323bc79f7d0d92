#!/bin/sh
# SPDX-License-Identifier: MIT
# Sourced by dracut's init: must not exit. Starts memstrackd under rd.memdebug=4|5 or rd.memstrack=N.
/usr/sbin/memstrackd-initrd start
