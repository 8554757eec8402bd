"""At the end of an elastic job, every host's copies of its commits are deleted: on this
machine directly, on the others over ssh (mpirun) or with one srun step per node."""
import shutil
import subprocess

from ..hosts import local_names

TIMEOUT = 15.0


def store_path(store_dir, run_id):
    return f"{store_dir.rstrip('/')}/mpirep-elastic-{run_id}"


def remove_copies(host_names, launcher, ssh_args, store_dir, run_id):
    """Best effort: a host that cannot be reached keeps its copy (a failed host's memory is
    usually gone with it)."""
    path = store_path(store_dir, run_id)
    shutil.rmtree(path, ignore_errors=True)
    commands = []
    for name in host_names:
        if launcher == "srun":
            commands.append(["srun", "--nodes=1", "--ntasks=1", f"--nodelist={name}",
                             "rm", "-rf", path])
        elif name not in local_names():
            commands.append(["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", *ssh_args,
                             name, "rm", "-rf", path])
    running = [subprocess.Popen(c, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
               for c in commands]
    for process in running:
        try:
            process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

