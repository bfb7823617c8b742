"""How each provider says no, on the wire: the status, headers and body of a rate limit, an
exhausted quota, a paid-only model, a rejected key and a server error, in the shapes of
quota-signals.md and realwire/; and the rate-limit headers some providers send on every
answer. One function per style; STYLES maps a profile's style to it.

Each refusal also names what happened, for the world's log: `rate_limit` (a window that
frees within the run), `quota` (a day, grant or session, or a paid-only model), `tpm_413`.
"""

import json
import math
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

DAY_SECONDS = 86400
RUN_PERIODS = {"day", "grant", "session"}  # outlast the run


@dataclass
class ErrorAnswer:
    status: int
    body: bytes
    outcome: str
    headers: list = field(default_factory=list)
    content_type: str = "application/json"


def _json(status, payload, outcome, headers=(), content_type="application/json"):
    return ErrorAnswer(status, json.dumps(payload).encode(), outcome, list(headers), content_type)


def outcome_of(overrun):
    return "quota" if overrun.limit.period in RUN_PERIODS else "rate_limit"


def seconds_to_utc_midnight(now=None):
    now = datetime.fromtimestamp(now or time.time(), timezone.utc)
    tomorrow = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return (tomorrow - now).total_seconds()


def seconds_to_pacific_midnight(now=None):
    """Google's daily quotas reset at midnight Pacific (UTC-8 here; daylight time ignored)."""
    return (seconds_to_utc_midnight(now) + 8 * 3600) % DAY_SECONDS or DAY_SECONDS


def wait_of(overrun, until_day_ends=seconds_to_utc_midnight):
    """Seconds until the overrun limit frees: its window, or the provider's next day."""
    return overrun.retry_after if overrun.retry_after is not None else until_day_ends()


def go_duration(seconds):
    """Groq's reset format: `2m59.56s`, `7.66s`, `185ms`."""
    if seconds < 1:
        return f"{max(1, round(seconds * 1000))}ms"
    minutes, rest = divmod(round(seconds, 2), 60)
    hours, minutes = divmod(int(minutes), 60)
    out = f"{hours}h" if hours else ""
    out += f"{minutes}m" if hours or minutes else ""
    return out + f"{rest:.2f}".rstrip("0").rstrip(".") + "s"


# --- The rate-limit headers of every answer -------------------------------------------------

def _find(figures, unit, *periods):
    for limit, remaining, frees in figures:
        if limit.unit == unit and limit.period in periods:
            return limit, remaining, frees
    return None


def groq_headers(figures):
    """RPD in `-requests`, TPM in `-tokens`, resets as Go durations (realwire groq__200)."""
    out = []
    day = _find(figures, "requests", "day")
    if day:
        limit, remaining, _ = day
        per_request = DAY_SECONDS / max(limit.amount, 1)
        out += [("x-ratelimit-limit-requests", limit.amount),
                ("x-ratelimit-remaining-requests", remaining),
                ("x-ratelimit-reset-requests", go_duration(per_request * (limit.amount - remaining)))]
    tpm = _find(figures, "tokens", "minute")
    if tpm:
        limit, remaining, frees = tpm
        out += [("x-ratelimit-limit-tokens", limit.amount),
                ("x-ratelimit-remaining-tokens", remaining),
                ("x-ratelimit-reset-tokens", go_duration(frees or 0))]
    return out


def cerebras_headers(figures):
    """`-requests-day` and `-tokens-minute`, resets in seconds."""
    out = []
    day = _find(figures, "requests", "day")
    if day:
        limit, remaining, _ = day
        out += [("x-ratelimit-limit-requests-day", limit.amount),
                ("x-ratelimit-remaining-requests-day", remaining),
                ("x-ratelimit-reset-requests-day", f"{seconds_to_utc_midnight():.2f}")]
    tpm = _find(figures, "tokens", "minute")
    if tpm:
        limit, remaining, frees = tpm
        out += [("x-ratelimit-limit-tokens-minute", limit.amount),
                ("x-ratelimit-remaining-tokens-minute", remaining),
                ("x-ratelimit-reset-tokens-minute", f"{frees or 0:.2f}")]
    return out


def mistral_headers(figures):
    """`-req-minute`, no reset (realwire mistral__429)."""
    rpm = _find(figures, "requests", "minute")
    if not rpm:
        return []
    limit, remaining, _ = rpm
    return [("x-ratelimit-limit-req-minute", limit.amount),
            ("x-ratelimit-remaining-req-minute", remaining)]


EVERY_ANSWER_HEADERS = {"groq": groq_headers, "cerebras": cerebras_headers,
                        "mistral": mistral_headers}


def rate_headers(style, figures):
    build = EVERY_ANSWER_HEADERS.get(style)
    return build(figures) if build else []


# --- Refusals, one style each ---------------------------------------------------------------

def groq(model, overrun):
    limit = overrun.limit
    name = {("tokens", "minute"): "tokens per minute (TPM)", ("requests", "minute"):
            "requests per minute (RPM)", ("requests", "day"): "requests per day (RPD)",
            ("tokens", "day"): "tokens per day (TPD)"}.get((limit.unit, limit.period), limit.describe())
    where = f"for model `{model}` in organization `org_day` service tier `on_demand` on {name}"
    if overrun.whole_window and limit.unit == "tokens":
        message = (f"Request too large {where}: Limit {limit.amount}, Requested {overrun.requested}, "
                   "Please reduce your message size and try again.")
        return _json(413, {"error": {"message": message, "type": "tokens",
                                     "code": "rate_limit_exceeded"}}, "tpm_413")
    wait = wait_of(overrun)
    message = (f"Rate limit reached {where}: Limit {limit.amount}, Used {overrun.used}, "
               f"Requested {overrun.requested}. Please try again in {go_duration(wait)}.")
    return _json(429, {"error": {"message": message, "type": limit.unit,
                                 "code": "rate_limit_exceeded"}},
                 outcome_of(overrun), [("retry-after", math.ceil(wait))])


def cerebras(model, overrun):
    what = "Tokens" if overrun.limit.unit == "tokens" else "Requests"
    per = {"minute": "minute", "day": "day"}.get(overrun.limit.period, overrun.limit.period)
    return _json(429, {"message": f"{what} per {per} limit exceeded - too many {overrun.limit.unit} "
                                  "processed.", "type": "too_many_requests_error",
                       "param": "quota", "code": "request_quota_exceeded"}, outcome_of(overrun))


def google(model, overrun):
    limit = overrun.limit
    per = "day" if limit.period in RUN_PERIODS else "minute"
    unit = "input_token_count" if limit.unit == "tokens" else "requests"
    quota_id = (f"Generate{'ContentInputTokens' if limit.unit == 'tokens' else 'Requests'}"
                f"Per{per.capitalize()}PerProjectPerModel-FreeTier")
    wait = wait_of(overrun, seconds_to_pacific_midnight)
    message = ("You exceeded your current quota, please check your plan and billing details.\n"
               f"* Quota exceeded for metric: generativelanguage.googleapis.com/"
               f"generate_content_free_tier_{unit}, limit: {limit.amount}, model: {model} "
               f"({limit.unit} per {per})\nPlease retry in {wait:.1f}s.")
    error = {"code": 429, "message": message, "status": "RESOURCE_EXHAUSTED", "details": [
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
            {"quotaMetric": f"generativelanguage.googleapis.com/generate_content_free_tier_{unit}",
             "quotaId": quota_id, "quotaDimensions": {"model": model, "location": "global"},
             "quotaValue": str(limit.amount)}]},
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{int(wait)}s"}]}
    return _json(429, [{"error": error}], outcome_of(overrun))


def mistral(model, overrun):
    return _json(429, {"object": "error", "message": "Rate limit exceeded", "type": "rate_limited",
                       "param": None, "code": "1300", "raw_status_code": 429}, outcome_of(overrun))


def openrouter(model, overrun):
    per = "day" if overrun.limit.period in RUN_PERIODS else "min"
    reset_ms = int((time.time() + wait_of(overrun)) * 1000)
    figures = {"X-RateLimit-Limit": str(overrun.limit.amount), "X-RateLimit-Remaining": "0",
               "X-RateLimit-Reset": str(reset_ms)}
    message = f"Rate limit exceeded: free-models-per-{per}. "
    if per == "day":
        message += "Add 10 credits to unlock 1000 free model requests per day"
    return _json(429, {"error": {"message": message, "code": 429,
                                 "metadata": {"headers": figures, "provider_name": None}},
                       "user_id": "user_day"}, outcome_of(overrun), figures.items())


def nvidia(model, overrun):
    """problem+json, no headers, no hint of when (quota-signals.md)."""
    return _json(429, {"status": 429, "title": "Too Many Requests"}, outcome_of(overrun),
                 content_type="application/problem+json")


def dashscope(model, overrun):
    if overrun.limit.period == "grant":
        code, status = "AllocationQuota.FreeTierOnly", 403
        message = ("The free tier of this model is exhausted. To keep using it on a paid basis, "
                   "turn off the free-tier-only mode in the console.")
    else:
        code, status = "Throttling.RateQuota", 429
        message = "Requests rate limit exceeded, please try again later."
    return _json(status, {"error": {"message": message, "type": code, "param": None, "code": code},
                          "request_id": "day-request"}, outcome_of(overrun))


def zai(model, overrun):
    return _json(429, {"error": {"code": "1302", "message": "Rate limit reached for requests"}},
                 outcome_of(overrun))


def zai_paid_only():
    return _json(429, {"error": {"code": "1113", "message":
                                 "Insufficient balance or no resource package. Please recharge."}},
                 "quota")


def ollama(model, overrun):
    if overrun.limit.period == "session":
        message = "you've reached your session usage limit, please wait or upgrade to continue"
    else:
        message = "too many requests, please slow down"
    return _json(429, {"error": message}, outcome_of(overrun))


def cloudflare(model, overrun):
    if overrun.limit.period in RUN_PERIODS:
        code, message = 4006, ("you have used up your daily free allocation of 10,000 neurons; "
                               "upgrade to the Workers Paid plan to keep using Workers AI")
    else:
        code, message = 3040, "Capacity temporarily exceeded, please try again"
    return _json(429, {"result": None, "success": False, "messages": [],
                       "errors": [{"code": code, "message": f"AiError: {message}"}]},
                 outcome_of(overrun))


def insufficient_quota(model, overrun):
    if overrun.limit.period not in RUN_PERIODS:
        return generic(model, overrun)
    return _json(429, {"error": {"message": "You exceeded your current quota, please check your "
                                            "plan and billing details.",
                                 "type": "insufficient_quota", "param": None,
                                 "code": "insufficient_quota"}}, "quota")


def generic(model, overrun):
    limit = overrun.limit
    wait = wait_of(overrun)
    return _json(429, {"error": {"message": f"Rate limit exceeded: {limit.describe()}",
                                 "type": "rate_limit_exceeded", "code": 429}},
                 outcome_of(overrun), [("retry-after", math.ceil(wait))])


STYLES = {"groq": groq, "cerebras": cerebras, "google": google, "mistral": mistral,
          "openrouter": openrouter, "nvidia": nvidia, "dashscope": dashscope, "zai": zai,
          "ollama": ollama, "cloudflare": cloudflare, "insufficient_quota": insufficient_quota,
          "generic": generic}


def refuse(style, model, overrun):
    return STYLES[style](model, overrun)


# --- Not about limits -----------------------------------------------------------------------

def busy(style, model):
    """The provider's own capacity, not the caller's quota: Mistral's 3505, OpenRouter's
    upstream rate limit (realwire/openrouter__429_upstream_rate_limited.json)."""
    if style == "mistral":
        return _json(429, {"object": "error", "message": "Service tier capacity exceeded for this "
                           "model.", "type": "service_tier_capacity_exceeded", "param": None,
                           "code": "3505", "raw_status_code": 429}, "rate_limit")
    raw = (f"{model} is temporarily rate-limited upstream. Please retry shortly, or add your own "
           "key to accumulate your rate limits")
    return _json(429, {"error": {"message": "Provider returned error", "code": 429,
                                 "metadata": {"raw": raw, "provider_name": "DayCloud"}},
                       "user_id": "user_day"}, "rate_limit")


def unauthorized():
    return _json(401, {"error": {"message": "Invalid API Key", "type": "invalid_request_error",
                                 "code": "invalid_api_key"}}, "auth")


def unknown_model(model):
    return _json(404, {"error": {"message": f"The model `{model}` does not exist or you do not "
                                            "have access to it.", "type": "invalid_request_error",
                                 "code": "model_not_found"}}, "not_found")


def server_error(rng):
    """A 500, 502 or 503, as free tiers answer now and then."""
    status = rng.choice([500, 502, 503])
    if status == 502:
        page = b"<html><head><title>502 Bad Gateway</title></head><body>Bad Gateway</body></html>"
        return ErrorAnswer(502, page, "5xx", content_type="text/html")
    message = {500: "Internal server error", 503: "The server is overloaded or not ready yet."}
    return _json(status, {"error": {"message": message[status], "type": "server_error"}}, "5xx")
