"""Runs host discovery every second in the background, so that a slow discovery script never
delays the driver's reaction to a lost rank."""
import threading

INTERVAL_SECONDS = 1.0


class DiscoveryThread:
    def __init__(self, discovery, warn, interval=INTERVAL_SECONDS):
        self._discovery = discovery
        self._warn = warn
        self._interval = interval
        self._lock = threading.Lock()
        self._latest = None
        self._stop = threading.Event()
        self._publish(discovery.discover())   # a broken script fails the job at once
        threading.Thread(target=self._loop, name="mpirep-host-discovery", daemon=True).start()

    def _publish(self, hosts):
        with self._lock:
            self._latest = hosts

    def latest(self):
        """{host: slots} as last discovered."""
        with self._lock:
            return dict(self._latest)

    def _loop(self):
        failing = False
        while not self._stop.wait(self._interval):
            try:
                self._publish(self._discovery.discover())
                failing = False
            except Exception as err:   # a transient failure: keep the last good answer
                if not failing:
                    self._warn(f"host discovery failed, keeping its last answer: {err}")
                failing = True

    def stop(self):
        self._stop.set()
