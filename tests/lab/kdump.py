# SPDX-License-Identifier: MIT
"""The kernel lab's kdump scenarios (scripts/kernel-lab KERNEL kdump | kdump-sizing): a real panic, memstrack
in the capture kernel, the dump written, and what the capture run used.

A scenario is one boot of the kernel's lab image with crashkernel= on its command line and a second disk
for the dump. Its one test, tests/lab/kdump-arm.sh, loads the capture kernel (Debian's own, with an
initramfs dracut makes with memstrack's module and the lab's dump step, tests/lab/dracut/99lab-kdump: what
Fedora's kdumpbase does) and panics it with sysrq c. The capture kernel traces from its first module
(rd.memstrack=3), prints memstrack's reports at pre-pivot, writes the dump with makedumpfile, saves the whole
capture run beside it (memstrackd-initrd kdump-done) and reboots, which ends qemu. The host then reads the
dump disk without mounting it (debugfs) and checks what the scenario promises:

  traced       crashkernel=384M: the reports on the console after the panic, naming modules the capture
               kernel loaded (its /proc/modules); the saved snapshot, whose peak covers the dump; a dump
               makedumpfile reads back (the crashed kernel's log, with its panic, out of it); a
               crashkernel= recommendation.
  untraced     as traced with lockdown=confidentiality on the capture kernel's command line, which closes
               tracefs, perf and BPF's reads of kernel memory: memstrackd cannot trace, says why, and the
               dump is written all the same.
  recommended  crashkernel= set to what traced recommended: the dump is written.
  below        crashkernel= a quarter below what traced needed at its peak: the dump fails, or memstrack
               reports the reservation as too small or tight.

"kdump" runs traced and untraced (CI's); "kdump-sizing" runs traced, recommended and below.
"""

import json
import os
import re
import shutil
import subprocess

SETS = {"kdump": ["traced", "untraced"], "kdump-sizing": ["traced", "recommended", "below"]}
# The first kernel's RAM (all of it is dumped) and the reservation of the traced and untraced runs.
FIRST_MEMORY = 1024
CRASHKERNEL_MIB = 384
DUMP_DISK_BYTES = 2 << 30
# Seconds the "below" scenario may take before its capture kernel counts as stuck (a traced run takes
# about 400 under TCG).
BELOW_DEADLINE = 900
# What the capture kernel boots with, besides the scenario's: the lab's root disk (mounted read-only at
# /sysroot, never pivoted to), one CPU and the device resets kdump kernels take.
CAPTURE_CMDLINE = ("root=/dev/vda ro console=ttyS0 irqpoll nr_cpus=1 reset_devices panic=-1 rd.shell=0 "
                   "systemd.show_status=0 loglevel=4 rd.memstrack=3")
REPORT_START = re.compile(r"======== Report format (\w+): ========")


def plan_entries(word):
    return [{"kdump": name, "label": f"kdump {name}", "name": f"kdump-{name}"} for name in SETS[word]]


def capture_initramfs(lab, args, root, tree, release, build, out):
    """The capture kernel's initramfs, made by dracut in a copy of the root with this build installed and
    the lab's dump step: out/kdump-initrd.img."""
    staging = os.path.join(args.cache, "kdump-staging")
    lab.remove(staging)
    try:
        lab.run(["cp", "-al", root, staging])
        modules = os.path.join(staging, "usr", "lib", "modules")
        os.makedirs(modules, exist_ok=True)
        lab.run(["cp", "-a", os.path.join(tree, "usr", "lib", "modules", release), modules])
        # Installed apart first, then copied in without writing through the root's hard links.
        installed = os.path.join(out, "installed")
        lab.run(["meson", "install", "-C", build, "--no-rebuild", "--quiet", "--destdir", installed],
                os.path.join(out, "install.log"))
        lab.run(["cp", "-a", "--remove-destination", installed + "/.", staging])
        lab.remove(installed)
        shutil.copytree(os.path.join(lab.LAB_FILES, "dracut", "99lab-kdump"),
                        os.path.join(staging, "usr", "lib", "dracut", "modules.d", "99lab-kdump"))
        with lab.Mounts(staging):
            lab.run(["chroot", staging, "depmod", "-a", release])
            lab.run(["chroot", staging, "dracut", "--force", "--no-hostonly", "--add", "memstrackd lab-kdump",
                     "--kver", release, "/boot/kdump-initrd.img"], os.path.join(out, "dracut.log"))
        shutil.move(os.path.join(staging, "boot", "kdump-initrd.img"), os.path.join(out, "kdump-initrd.img"))
    finally:
        lab.remove(staging)


def read_dump_disk(lab, image, where):
    """The dump disk's crash/ folder, copied out with debugfs (no mount, no loop device)."""
    lab.remove(where)
    os.makedirs(where)
    lab.run(["debugfs", "-R", f"rdump /crash {where}", image])
    dirs = sorted(os.listdir(os.path.join(where, "crash"))) if os.path.isdir(os.path.join(where, "crash")) else []
    return os.path.join(where, "crash", dirs[-1]) if dirs else None


def console_reports(text):
    """The capture kernel's part of the console (after the panic) and each report format printed there:
    {format: [lines]}."""
    after = text.split("Trigger a crash", 1)[1] if "Trigger a crash" in text else ""
    reports, current = {}, None
    for line in after.splitlines():
        line = line.strip("\r")
        m = REPORT_START.search(line)
        if m:
            current = reports.setdefault(m.group(1), [])
            continue
        if "END ========" in line:
            current = None
        elif current is not None:
            current.append(line)
    return after, reports


def module_names(lines):
    """The loadable modules a module_summary names: not the kernel image (vmlinux) or a module still
    loading ("[loading]")."""
    names = {m.group(1) for m in (re.match(r"^Module (\S+) using", l) for l in lines) if m}
    return {n for n in names if n != "vmlinux" and not n.startswith("[")}


def mib(n):
    return f"{(n or 0) / 1048576:.1f} MiB"


def loaded_modules(path):
    with open(path) as f:
        return {line.split()[0] for line in f if line.strip()}


def memstrackctl(build, *argv):
    return subprocess.run([os.path.join(build, "client", "memstrackctl")] + list(argv), capture_output=True,
                          text=True)


def saved_recommendation(build, dump_dir):
    """The crashkernel report of the snapshot saved beside the dump, as JSON; None without one."""
    snapshot = os.path.join(dump_dir, "memstrack.snapshot")
    if not os.path.exists(snapshot):
        return None
    r = memstrackctl(build, "report", "--from", snapshot, "--format", "crashkernel", "--json")
    return json.loads(r.stdout).get("crashkernel") if r.returncode == 0 and r.stdout.strip() else None


def check_dump(dump_dir):
    """Whether a vmcore was written, and the check that it is one makedumpfile reads: the crashed kernel's
    log comes out of it, with the panic."""
    vmcore = os.path.join(dump_dir, "vmcore")
    status = open(os.path.join(dump_dir, "makedumpfile.status")).read().strip() \
        if os.path.exists(os.path.join(dump_dir, "makedumpfile.status")) else "none"
    if not os.path.exists(vmcore):
        return False, (False, f"no vmcore written (makedumpfile status {status}): " +
                       open(os.path.join(dump_dir, "makedumpfile.log"), errors="replace").read()[-500:]
                       if os.path.exists(os.path.join(dump_dir, "makedumpfile.log")) else "no makedumpfile log")
    dmesg = os.path.join(dump_dir, "dmesg-from-vmcore")
    r = subprocess.run(["makedumpfile", "--dump-dmesg", vmcore, dmesg], capture_output=True, text=True)
    text = open(dmesg, errors="replace").read() if os.path.exists(dmesg) else ""
    size = os.path.getsize(vmcore)
    return True, (r.returncode == 0 and "sysrq: Trigger a crash" in text,
                  f"the dump ({size >> 20} MiB) read back by makedumpfile --dump-dmesg: exit {r.returncode}, "
                  f"the crashed kernel's log {'holds' if 'sysrq: Trigger a crash' in text else 'lacks'} its panic"
                  + ("" if r.returncode == 0 else f" ({(r.stderr or r.stdout).strip()[-300:]})"))


def check_traced(build, console_after, reports, dump_dir, checks):
    """The traced run's checks; returns its crashkernel figures (None without them), which the sizing
    scenarios size by."""
    capture_modules = loaded_modules(os.path.join(dump_dir, "modules"))
    named = module_names(reports.get("module_summary", []))
    checks.append((bool(named) and named <= capture_modules,
                   f"the console's module_summary after the panic names {len(named)} modules "
                   f"({', '.join(sorted(named)[:8])}), all loaded by the capture kernel "
                   f"({len(capture_modules)} in its /proc/modules)" +
                   ("" if named <= capture_modules else f"; not loaded: {sorted(named - capture_modules)}")))
    checks.append(("task_summary" in reports and "module_top" in reports,
                   f"the console has the formats {sorted(reports)} (rd.memstrack=3: task_summary, "
                   "module_summary, module_top, then crashkernel after the dump)"))
    snapshot = os.path.join(dump_dir, "memstrack.snapshot")
    if not os.path.exists(snapshot):
        checks.append((False, f"no memstrack.snapshot beside the dump: {sorted(os.listdir(dump_dir))}"))
        return None
    r = memstrackctl(build, "report", "--from", snapshot, "--format", "module_summary")
    saved = module_names(r.stdout.splitlines())
    checks.append((r.returncode == 0 and named <= saved,
                   f"memstrackctl report --from the saved snapshot shows {len(saved)} modules, the console's among them"))
    r = memstrackctl(build, "report", "--from", snapshot, "--format", "task_summary", "--json")
    tasks = json.loads(r.stdout).get("task_summary", []) if r.returncode == 0 and r.stdout.strip() else []
    comms = {t.get("comm") for t in tasks if isinstance(t, dict)}
    checks.append(("makedumpfile" in comms,
                   "the saved snapshot traced the dump itself: makedumpfile is among its tasks" +
                   ("" if "makedumpfile" in comms else f" (tasks: {sorted(c for c in comms if c)[:20]})")))
    rec = saved_recommendation(build, dump_dir)
    if not rec:
        checks.append((False, "no crashkernel recommendation from the saved snapshot"))
        return None
    checks.append((rec["captureKernel"] and rec["systemRamBytes"] and rec["recommendedMiB"] > 0 and
                   rec["neededBytes"] <= rec["systemRamBytes"],
                   f"crashkernel: RAM {mib(rec['systemRamBytes'])}, kept by the kernel {mib(rec['keptByKernelBytes'])}, "
                   f"in use when tracing began {mib(rec['inUseAtStartBytes'])}, tracked peak "
                   f"{mib(rec['peakTrackedBytes'])}, needed {mib(rec['neededBytes'])}: recommends "
                   f"crashkernel={rec['crashkernel']} ({rec['verdict']} for this run)"))
    checks.append(("crashkernel" in reports, "the crashkernel report on the console after the dump"))
    return rec


def check_untraced(console_after, checks):
    """memstrackd did not start, said it on the console, and its reason names the lockdown."""
    lines = [l.strip() for l in console_after.splitlines()]
    said = [l for i, l in enumerate(lines) if "memstrackd-initrd:" in l or
            (i > 0 and "did not start" in lines[i - 1])]
    started = any("tracing page allocations" in l for l in said)
    checks.append((not started and any("did not start" in l for l in said) and
                   any("locked down" in l for l in lines),
                   "memstrackd did not trace under lockdown=confidentiality and said why: " + " | ".join(said[:4])[:600]))


def run_scenario(lab, args, kernel, entry, root, tree, image_dir, build, release, version):
    """One kdump scenario on kernel: (passed, failed, skipped, lines)."""
    name = entry["kdump"]
    out = os.path.join(args.work, f"{kernel.name}-kdump-{name}")
    state = getattr(args, "kdump_figures", {}).get(kernel.name)
    if name in ("recommended", "below") and not state:
        return 0, 0, 1, [f"  SKIP    kdump {name}: no traced run's figures to size it by"]
    if name == "recommended":
        crash_mib = state["recommendedMiB"]
    elif name == "below":
        crash_mib = max(64, int(state["neededBytes"] * 0.75) >> 20)
    else:
        crash_mib = CRASHKERNEL_MIB
    guest = lab.Guest(args, kernel, image_dir, out, [{
        "name": f"kdump-{name}", "label": f"kdump {name}", "cmd": ["sh", os.path.join(lab.LAB_FILES, "kdump-arm.sh")],
        "env": {}, "workdir": "/", "timeout": 600}], build, release, version)
    # One capture initramfs a kernel and run: every scenario boots the same.
    made = args.__dict__.setdefault("kdump_initramfs", {})
    if kernel.name not in made:
        lab.log(f"{kernel.name}: kdump: the capture kernel's initramfs")
        capture_initramfs(lab, args, root, tree, release, build, out)
        made[kernel.name] = os.path.join(args.work, f"{kernel.name}-kdump-initrd.img")
        shutil.move(os.path.join(out, "kdump-initrd.img"), made[kernel.name])
    shutil.copy(made[kernel.name], os.path.join(out, "kdump-initrd.img"))
    shutil.copy(os.path.join(image_dir, "vmlinuz"), os.path.join(out, "vmlinuz"))
    with open(os.path.join(out, "capture-cmdline"), "w") as f:
        f.write(CAPTURE_CMDLINE + (" lockdown=confidentiality" if name == "untraced" else ""))
    disk = os.path.join(out, "dump.img")
    with open(disk, "wb") as f:
        f.truncate(DUMP_DISK_BYTES)
    lab.run(["mkfs.ext4", "-q", "-F", "-L", "labdump", disk])
    guest.append = f"crashkernel={crash_mib}M"
    guest.drives = [disk]
    guest.memory = FIRST_MEMORY
    if name == "below":
        # A capture kernel short of memory may thrash rather than fail: that is a failed dump too.
        guest.deadline = min(args.deadline, BELOW_DEADLINE)
    guest.boot()
    text = guest.console_text()
    lines = [guest.headline() + f", crashkernel={crash_mib}M"]
    console_after, reports = console_reports(text)
    checks = []
    checks.append((bool(console_after), "the first kernel panicked and the capture kernel booted"))
    dump_dir = read_dump_disk(lab, disk, os.path.join(out, "dump")) if console_after else None
    if console_after and not dump_dir:
        checks.append((name == "below", "the capture kernel wrote nothing to the dump disk"))
    elif dump_dir:
        wrote, dump_check = check_dump(dump_dir)
        # Below the need, a dump that is not written is what the scenario expects.
        if name != "below":
            checks.append(dump_check)
        if name == "traced":
            args.__dict__.setdefault("kdump_figures", {})[kernel.name] = \
                check_traced(build, console_after, reports, dump_dir, checks)
        elif name == "untraced":
            check_untraced(console_after, checks)
        elif name == "recommended":
            rec = saved_recommendation(build, dump_dir)
            checks.append((wrote, f"the recommended crashkernel={crash_mib}M held the capture run: dump "
                                  f"{'written' if wrote else 'failed'}; memstrack's verdict in it: "
                                  f"{rec['verdict'] if rec else 'no snapshot'}" +
                                  (f" (needed {mib(rec['neededBytes'])})" if rec else "")))
        elif name == "below":
            # Too small: the dump failed, or memstrack says so of the run (an OOM kill, or less than its
            # margin to spare). Either way the scenario passes; what happened goes in its lines.
            rec = saved_recommendation(build, dump_dir)
            verdict = rec["verdict"] if rec else "no snapshot"
            checks.append((not wrote or verdict in ("too small", "tight"),
                           f"a quarter below the traced run's need: dump {'written' if wrote else 'failed'}, "
                           f"memstrack's verdict: {verdict}"))
    if not guest.ended and name != "below":
        checks.append((False, f"the guest was killed at the deadline ({guest.deadline} s)"))
    failed = sum(1 for ok, _ in checks if not ok)
    lines.append(f"  {'OK' if not failed else 'FAIL':7} kdump {name} ({guest.seconds:.0f} s)")
    lines += [f"          {'ok  ' if ok else 'FAIL'} {what}" for ok, what in checks]
    if failed:
        lines += ["          the console's end:"] + [f"          | {l}" for l in text.strip().splitlines()[-40:]]
    return (0, 1, 0, lines) if failed else (1, 0, 0, lines)
