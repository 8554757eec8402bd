"""What the user asked for, resolved and validated, and the plan that runs it."""
from __future__ import annotations

import shlex
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Job:
    command: list              # the program every rank runs, with its arguments
    num_proc: int | None       # None: let srun take it from the allocation
    hosts: list | None         # [Host] from -H/--hostfile; None: this machine or the allocation
    slots: int | None          # slots where hosts is None: local cores, or SLURM_NTASKS
    rank_env: dict             # variables the launcher sets for every rank (tuning, -x)
    forward_names: list        # more variables to pass by name to ranks on other hosts
    mpi_args: list = field(default_factory=list)
    binding_args: list | None = None     # None: the launcher's default binding
    network_interfaces: list = field(default_factory=list)
    tcp_only: bool = False
    ssh_args: list = field(default_factory=list)
    output_dir: str | None = None
    running_as_root: bool = False
    srun_mpi: str = "pmix"
    # Inside a Slurm allocation, Hydra starts its proxies with srun, whose default --mpi
    # plugin (often pmix) would hand the ranks a second PMI; None: leave srun's default
    hydra_srun_mpi: str | None = None
    spans_hosts: bool = False            # some ranks run on other hosts than this one
    peer_timeout_seconds: float = 0.0    # the ranks' peer_timeout_seconds (0: off)


@dataclass(frozen=True)
class Plan:
    argv: list                 # run exactly this, never through a shell
    env: dict                  # set in the launcher process's environment first

    def render(self):
        """The plan as one line a POSIX shell would run identically."""
        assignments = [f"{name}={shlex.quote(value)}" for name, value in self.env.items()]
        return " ".join(assignments + [shlex.join(self.argv)])
