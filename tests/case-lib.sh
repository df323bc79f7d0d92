# SPDX-License-Identifier: MIT
# Named cases for the test scripts that run many checks in one go (sourced, not run): run_case counts
# each case's outcome, bad says why a case fails, cases_report ends the script with the tally.
# The sourcing script may set CASES_VAR to the name of an environment variable (MEMSTRACK_SYSTEMD_CASES,
# say) that, when set to "test_a test_b", runs only those cases, to chase one failure.

pass=0 fail=0
failed=()

# Runs one case; a case fails by returning non-zero after saying why (bad).
run_case() {
    local t0=$SECONDS only=
    [ -n "${CASES_VAR:-}" ] && only=${!CASES_VAR:-}
    if [ -n "$only" ] && [[ " $only " != *" $1 "* ]]; then
        return 0
    fi
    echo "== $1"
    if "$1"; then
        pass=$((pass + 1))
        echo "PASS: $1 ($((SECONDS - t0)) s)"
    else
        fail=$((fail + 1))
        failed+=("$1")
        echo "FAIL: $1 ($((SECONDS - t0)) s)"
    fi
}

# bad WHY: says why the case fails, and fails (`check || bad "..." || return 1`).
bad() {
    echo "  $*" >&2
    return 1
}

# cases_report NAME: the tally, as the script's last command (its status is the script's).
cases_report() {
    echo "$1: $pass passed, $fail failed${failed[*]:+ (${failed[*]})}"
    [ "$fail" -eq 0 ]
}
