"""What mpirep-run's elastic driver and the ranks it starts say to each other.

Standard library only: the launcher imports this module too.  Every rank keeps one TCP
connection to the driver (its lifeline) for as long as it runs; messages are JSON objects, one
per line.  The driver tells ranks where it listens, and everything else a rank needs, through
the environment variables below.
"""
import json

# Environment of every rank, set by the driver.
DRIVER = "MPIREP_ELASTIC_DRIVER"          # host:port of the driver's lifeline listener
TOKEN = "MPIREP_ELASTIC_TOKEN"            # secret a rank presents in its hello
RUN_ID = "MPIREP_ELASTIC_RUN"             # names this job's commit store on every host
GENERATION = "MPIREP_ELASTIC_GENERATION"  # 0 for the first launch, +1 for each restart
SHARED_DIR = "MPIREP_ELASTIC_SHARED_DIR"  # optional directory every host sees: one more copy
STORE_DIR = "MPIREP_ELASTIC_STORE_DIR"    # where each host keeps its copies (default /dev/shm)

# rank -> driver
HELLO = "hello"          # first message: token, generation, rank, size, host, pid
EXIT = "exit"            # the process is ending on its own (end of script or sys.exit)
ERROR = "error"          # an uncaught exception: a bug, never retried
RESTART = "restart"      # asks for a new generation; "together": every rank asks at once
                         # (hosts changed) and leaves by itself
STOPPED = "stopped"      # obeys the driver's stop
SIGNALLED = "signal"     # terminated by a signal, usually the launcher tearing the job down
LOST = "lost"            # not a goodbye: "ranks" stopped answering this rank's core (peer
                         # timeout); the driver counts their hosts as lost

# driver -> rank
HOSTS_UPDATED = "hosts_updated"   # with "serial": hosts were added or removed
STOP = "stop"                     # exit now: this generation is over

# Exit status of a rank that leaves on the driver's stop, without finishing MPI: the driver
# already knows why, and the launcher only needs to see that the rank ended.
STOPPED_EXIT_STATUS = 75


def encode(kind, **fields):
    return (json.dumps({"kind": kind, **fields}, separators=(",", ":")) + "\n").encode()


def decode(line):
    """The message in one line, or None for a line that is not one."""
    try:
        message = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    return message if isinstance(message, dict) and isinstance(message.get("kind"), str) else None
