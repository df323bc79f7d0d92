#!/bin/sh
# SPDX-License-Identifier: MIT
# Sourced by dracut at the end of pre-pivot (after memstrack's report there). In a capture kernel: the
# dump to the lab's dump disk (the guest's second disk), memstrack's capture run beside it, a reboot (qemu
# ends). What the host checks it by goes beside the dump too: the capture kernel's modules, its memory
# before and after, makedumpfile's output and exit status.
if [ -e /proc/vmcore ]; then
        lab_say() { echo "lab-kdump: $*" >/dev/console; }
        lab_dir=/labdump/crash/$(date +%Y%m%d-%H%M%S)
        mkdir -p /labdump
        if mount -t ext4 /dev/vdb /labdump && mkdir -p "$lab_dir"; then
                cat /proc/cmdline >"$lab_dir/cmdline"
                cat /proc/meminfo >"$lab_dir/meminfo-before"
                cat /proc/iomem >"$lab_dir/iomem"
                lab_say "writing the dump to $lab_dir"
                makedumpfile -l -d 31 /proc/vmcore "$lab_dir/vmcore-incomplete" >"$lab_dir/makedumpfile.log" 2>&1
                lab_status=$?
                [ $lab_status -eq 0 ] && mv "$lab_dir/vmcore-incomplete" "$lab_dir/vmcore"
                echo "$lab_status" >"$lab_dir/makedumpfile.status"
                lab_say "makedumpfile exited with $lab_status"
                cat /proc/meminfo >"$lab_dir/meminfo-after"
                cat /proc/modules >"$lab_dir/modules"
                if [ -x /usr/sbin/memstrackd-initrd ]; then
                        /usr/sbin/memstrackd-initrd kdump-done "$lab_dir"
                fi
                cp /run/memstrack/memstrackd-initrd.log "$lab_dir/memstrackd.log" 2>/dev/null
                sync
                umount /labdump
        else
                lab_say "cannot mount the dump disk /dev/vdb"
        fi
        lab_say "rebooting"
        echo b >/proc/sysrq-trigger
        sleep 600
fi
