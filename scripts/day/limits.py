"""Free-tier limits as the simulated world enforces them, and what each has counted.

A limit counts requests or tokens, for each model or for a whole account, over a period:
a second, a minute or an hour are ROLLING windows; a day, a grant or a session outlasts the
run (its reset lies beyond it), so it is a plain counter that only ever grows. Only admitted
requests are counted; a refused one costs nothing. This file knows nothing of how a provider
says no (see refusals.py).
"""

import threading
from collections import deque
from dataclasses import dataclass

# Rolling windows, in seconds; the other periods never reset within a run.
WINDOW_SECONDS = {"second": 1.0, "minute": 60.0, "hour": 3600.0}


@dataclass(frozen=True)
class Limit:
    unit: str            # "requests" or "tokens"
    period: str          # "second", "minute", "hour", "day", "grant" or "session"
    amount: int
    scope: str = "model"  # "model": one count per model; "account": one for the provider
    only: tuple = ()     # the models it applies to (empty: all of the provider's)
    published: bool = False  # stated in the catalog (fcm can know it) or not

    @property
    def window(self):
        """Seconds of its rolling window, or None when it lasts the whole run."""
        return WINDOW_SECONDS.get(self.period)

    def applies_to(self, model):
        return not self.only or model in self.only

    def describe(self):
        return f"{self.amount} {self.unit} per {self.period}"


def from_catalog_quota(quota, only=()):
    """The limits a catalog `quota` object states (published), in its scope."""
    scope = "account" if quota.get("scope") == "provider" else "model"
    fields = [("requestsPerMinute", "requests", "minute"), ("requestsPerDay", "requests", "day"),
              ("tokensPerMinute", "tokens", "minute"), ("tokensPerDay", "tokens", "day")]
    return [Limit(unit, period, int(quota[name]), scope, tuple(only), published=True)
            for name, unit, period in fields if name in quota]


class Meter:
    """What one limit has counted for one model (or one account)."""

    def __init__(self, limit):
        self.limit = limit
        self.events = deque()  # (time, amount), within a rolling window
        self.total = 0

    def used(self, now):
        window = self.limit.window
        if window is not None:
            while self.events and self.events[0][0] <= now - window:
                self.total -= self.events.popleft()[1]
        return self.total

    def add(self, now, amount):
        self.used(now)
        self.total += amount
        if self.limit.window is not None:
            self.events.append((now, amount))

    def fits(self, now, amount):
        """A rolling window must hold the whole request; a limit that lasts the run admits
        requests while anything is left of it (the last one may overdraw it, as a grant's
        balance does)."""
        if self.limit.window is None:
            return self.used(now) < self.limit.amount
        return self.used(now) + amount <= self.limit.amount

    def frees_in(self, now, amount):
        """Seconds until `amount` more fits, or None when only the next period frees it."""
        if self.limit.window is None:
            return None
        need = self.used(now) + amount - self.limit.amount
        for at, n in self.events:
            need -= n
            if need <= 0:
                return max(0.0, at + self.limit.window - now)
        return self.limit.window

    def remaining(self, now):
        return max(0, self.limit.amount - self.used(now))


@dataclass
class Overrun:
    """The limit a request would break, and what the provider can say about it."""
    limit: Limit
    used: int
    requested: int
    retry_after: float | None   # None: not within the run
    whole_window: bool          # the request alone is more than a rolling window allows


class Ledger:
    """Every limit's meters for every provider; admits a request or names the limit it breaks."""

    def __init__(self, limits_by_provider):
        self.limits = limits_by_provider  # provider id -> [Limit]
        self.meters = {}
        self.lock = threading.Lock()

    def _meter(self, provider, index, model):
        limit = self.limits[provider][index]
        key = (provider, index, model if limit.scope == "model" else "*")
        if key not in self.meters:
            self.meters[key] = Meter(limit)
        return self.meters[key]

    def _applicable(self, provider, model):
        for index, limit in enumerate(self.limits.get(provider, [])):
            if limit.applies_to(model):
                yield self._meter(provider, index, model)

    def _first_overrun(self, provider, model, cost, now):
        for meter in self._applicable(provider, model):
            amount = cost[meter.limit.unit]
            if not meter.fits(now, amount):
                limit = meter.limit
                return Overrun(limit, meter.used(now), amount, meter.frees_in(now, amount),
                               limit.window is not None and amount > limit.amount)
        return None

    def admit(self, provider, model, cost, now):
        """Counts the request (`cost`: requests and tokens) and returns None, or returns the
        first limit it would break and counts nothing."""
        with self.lock:
            overrun = self._first_overrun(provider, model, cost, now)
            if overrun is None:
                for meter in self._applicable(provider, model):
                    meter.add(now, cost[meter.limit.unit])
            return overrun

    def overrun(self, provider, model, cost, now):
        """The limit a request of `cost` would break now, without counting it."""
        with self.lock:
            return self._first_overrun(provider, model, cost, now)

    def figures(self, provider, model, now):
        """(limit, remaining now, seconds until its window is empty again, or None when it
        lasts the run) for each limit on this model, for the headers providers send with
        every answer."""
        with self.lock:
            out = []
            for meter in self._applicable(provider, model):
                frees = meter.frees_in(now, meter.limit.amount) if meter.used(now) else 0.0
                out.append((meter.limit, meter.remaining(now), frees))
            return out
