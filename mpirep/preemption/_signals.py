"""The preemption signals: a handler that only records that one came, and the agreement of
every rank, at a step boundary, on whether any rank got one."""

import signal

import numpy as np


def parse_signals(text):
    """The signals named in ``text`` ("USR1,TERM", "SIGUSR2", "10"), as signal.Signals."""
    found = []
    for word in (w.strip() for w in text.split(",")):
        if not word:
            continue
        name = word.upper() if word.upper().startswith("SIG") else "SIG" + word.upper()
        try:
            number = signal.Signals(int(word)) if word.isdigit() else signal.Signals[name]
        except (KeyError, ValueError):
            raise ValueError(f"mpirep setting preemption_signals: {word!r} is not a signal name "
                             "(expected names such as USR1, TERM, or numbers)") from None
        if number in (signal.SIGKILL, signal.SIGSTOP):
            raise ValueError(f"mpirep setting preemption_signals: {number.name} cannot be caught")
        if number not in found:
            found.append(number)
    return found


def _allreduce_max(flag):
    import mpirep

    return int(mpirep.allreduce(np.array([flag], np.int32), op=mpirep.Max,
                                name="mpirep.preemption.agree")[0])


class SignalWatcher:
    """Records the preemption signals this process gets, and tells every rank alike whether any
    rank got one.

    ``install`` replaces the signals' handlers by one that sets a flag and does nothing else, so
    that a signal never interrupts a step or a save half-way; ``uninstall`` puts the previous
    handlers back. ``should_stop`` is a collective: every rank calls it at every step boundary,
    and all get the same answer, so that all stop after the same step even when the signal
    reached one rank only, or reached ranks on either side of a boundary."""

    def __init__(self, signals, allreduce_max=_allreduce_max):
        self.signals = list(signals)
        self.received = []   # the signals received, in order
        self._allreduce_max = allreduce_max
        self._previous = {}

    def _record(self, number, frame):
        self.received.append(signal.Signals(number))

    def install(self):
        for number in self.signals:
            self._previous[number] = signal.signal(number, self._record)
        return self

    def uninstall(self):
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous.clear()

    def should_stop(self):
        """Whether any rank has received a signal by now; the same on every rank."""
        if not self.signals:
            return False
        return self._allreduce_max(1 if self.received else 0) > 0

    def __enter__(self):
        return self.install()

    def __exit__(self, *exc):
        self.uninstall()
