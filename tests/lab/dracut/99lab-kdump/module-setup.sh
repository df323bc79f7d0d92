#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The kernel lab's dump step in a capture initramfs (dracut --add lab-kdump): what Fedora's and RHEL's
# kdumpbase module does, cut to the lab's one target. In a capture kernel (/proc/vmcore), at the end of
# pre-pivot: mount the lab's dump disk, write the crashed kernel's memory with makedumpfile, hand the
# directory to memstrack (memstrackd-initrd kdump-done) and reboot. Never included unless asked for.

check() {
        return 255
}

depends() {
        return 0
}

install() {
        inst_multiple makedumpfile mount umount mkdir cp cat date sync sleep
        inst_hook pre-pivot 9999 "$moddir/lab-kdump.sh"
}
