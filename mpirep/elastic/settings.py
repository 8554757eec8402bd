"""Where this rank stands in an elastic job, read once from the environment mpirep-run's
elastic driver sets (see protocol.py).  Outside such a job ``launched`` is False and the
elastic API works within the one process: commits stay in memory."""
import dataclasses
import os

from mpirep.elastic import protocol

DEFAULT_STORE_DIR = "/dev/shm" if os.path.isdir("/dev/shm") else "/tmp"


@dataclasses.dataclass(frozen=True)
class ElasticSettings:
    driver: str = ""          # host:port; "" outside an elastic job
    token: str = ""
    run_id: str = ""
    generation: int = 0
    store_dir: str = DEFAULT_STORE_DIR
    shared_dir: str = ""

    @property
    def launched(self):
        return bool(self.driver)

    @classmethod
    def from_environment(cls, environ=None):
        environ = os.environ if environ is None else environ
        generation = environ.get(protocol.GENERATION, "0")
        if not generation.isdigit():
            raise ValueError(f"{protocol.GENERATION}={generation!r} is not a generation number")
        return cls(driver=environ.get(protocol.DRIVER, ""),
                   token=environ.get(protocol.TOKEN, ""),
                   run_id=environ.get(protocol.RUN_ID, ""),
                   generation=int(generation),
                   store_dir=environ.get(protocol.STORE_DIR) or DEFAULT_STORE_DIR,
                   shared_dir=environ.get(protocol.SHARED_DIR, ""))


_settings = None


def settings():
    global _settings
    if _settings is None:
        _settings = ElasticSettings.from_environment()
    return _settings
