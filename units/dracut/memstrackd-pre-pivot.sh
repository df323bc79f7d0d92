#!/bin/sh
# SPDX-License-Identifier: MIT
# Sourced by dracut's init: must not exit. The report to the console, a snapshot under /run/memstrack.
/usr/sbin/memstrackd-initrd stop
