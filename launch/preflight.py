"""Before mpirun starts ranks over ssh, check every remote host answers within the start
timeout, so that a typo or a dead node gives one clear line instead of a hang in mpirun."""
import subprocess
import time

from .hosts import is_local


def unreachable_hosts(hosts, ssh_args, timeout):
    """{host name: why} for the remote hosts that `ssh HOST true` could not reach in time."""
    checks = {}
    for host in hosts:
        if not is_local(host):
            argv = ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={max(1, int(timeout))}",
                    *ssh_args, host.name, "true"]
            try:
                checks[host.name] = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                                     text=True, start_new_session=True)
            except OSError as err:
                return {host.name: f"cannot run ssh: {err}"}
    deadline = time.monotonic() + timeout
    failed = {}
    for name, check in checks.items():
        try:
            _, err = check.communicate(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            check.kill()
            check.communicate()
            failed[name] = f"no answer within {timeout:g} s"
            continue
        if check.returncode != 0:
            failed[name] = err.strip() or f"ssh exit status {check.returncode}"
    return failed
