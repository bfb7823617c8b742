//! The fake provider's repertoire: what each model name makes it do ([`Behavior`]), and
//! the shapes some behaviours take: whose reasoning ([`Thinker`]), whose rate-limit
//! headers ([`LimitStyle`]), how another model's answer is finished ([`Finishing`]). Names
//! and values only: the answers are written by `respond` and the answer files beside it
//! (`tools`, `thinking`, `rate_limits`, `awkward_streams`, `continuations`).

use std::time::Duration;

/// What the fake provider does with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Behavior {
    /// Answers in the mode asked for (JSON or SSE).
    Ok,
    /// Like `ok` but streams word by word with a short pause between words.
    OkStream,
    /// Waits this long, then answers like `ok`.
    Slow(Duration),
    EmptyChoices,
    EmptyContent,
    /// 200 with an `error` object as the whole body.
    ErrorPayload200,
    InvalidJson,
    /// 200 with an HTML maintenance page.
    Html,
    /// An SSE stream with only a role delta, then `[DONE]`.
    SseEmpty,
    SseErrorFirst,
    SseErrorAfterContent,
    /// Keep-alive comments for a while, then a normal stream.
    SseKeepaliveThenOk,
    /// 429 with `Retry-After` of this many seconds.
    RateLimit(u64),
    /// 429 with `x-ratelimit-reset-requests` (as `XmYs`) instead of `Retry-After`.
    RateLimitReset(u64),
    /// 403 saying the model's free tier is exhausted, as DashScope words it
    /// (`AllocationQuota.FreeTierOnly`): a used-up grant, not a rejected key.
    FreeTierExhausted,
    /// 429 saying the account's quota is used up (`insufficient_quota`).
    InsufficientQuota,
    /// 400 saying the prompt exceeds the model's maximum context length.
    ContextOverflow,
    /// The first request gets 503 with `Retry-After: 1`; later ones are answered.
    BusyOnce,
    /// The first this many requests get 500; later ones are answered (a model that was
    /// down and recovered).
    FailsFirst(u64),
    /// Answers like `ok`, but the bench's sum wrong (`The answer is 41.`).
    WrongSum,
    /// Every answer is the provider's notice that the model now needs a paid plan (HTTP
    /// 200, the notice as the model's content), as providers that turned a free model
    /// paid answer.
    PaidNotice,
    /// [`PaidNotice`](Behavior::PaidNotice) streamed a few words at a time, as a gateway
    /// that writes its notice through the model's stream does.
    PaidNoticeStreamed,
    /// Answers as a model editing a file for Aider (its `whole` edit format): `hello.txt`
    /// with the line `fcm-edit-ok`; asked for a commit message, a one-line message.
    AiderEdit,
    Auth401,
    BadRequest400,
    Server500,
    /// Accepts and never answers.
    Hang,
    /// Reads the request and closes the connection.
    DropConnection,
    /// Over 256 KiB of frames without content, then `[DONE]`.
    SseNoUseful256k,
    /// Reasoning only, cut at `max_tokens` (`finish_reason: length`) before any answer.
    ReasoningOnly,
    ToolCallsOnly,
    /// 200 with this many bytes of garbage.
    Garbage(usize),
    /// Streams some content, then stalls for this long before finishing.
    StallAfterContent(Duration),
    /// Some text, then `finish_reason: length`: the answer was cut at `max_tokens`.
    CutAtLength,
    /// Streams some content, then drops the connection in the middle of the body.
    DropAfterContent,
    /// Streams some content and ends the body cleanly, but never says the answer is over
    /// (no `finish_reason`, no `[DONE]`).
    EndsWithoutFinish,
    /// The whole answer (`Hello from <model>.`) with `finish_reason: stop`, then the
    /// connection drops before the body ends: streamed, in the middle of the usage chunk
    /// and without `[DONE]`; whole, short of the length its head declared. With a time
    /// (`finish_then_drop:3000`), a stream is held open and silent that long first.
    FinishThenDrop(Option<Duration>),
    /// Gemini 3's tool calls: each carries a thought signature that must come back on the
    /// next turn, or the request is refused (400). See `signatures`.
    SignedToolTurns,
    /// Finishes an answer another model began (the text it was given as the assistant's
    /// turn), in one of the ways models do: `continues` goes on (and says how much it was
    /// given), `restarts` says all of it again first, `repeats_last:N` its last N words,
    /// `starts_over` begins it again and departs from it (see `continuations`). With a
    /// number (`continues:6000`), it is silent that many milliseconds before it answers.
    Finishes(Finishing, Option<Duration>),
    /// Waits this long, then answers 500.
    SlowFail(Duration),
    /// The first this many requests are answered like `ok`; later ones get 400, as a model
    /// answers a request it will not take (a conversation that grew past what it accepts).
    BadRequestAfter(u64),
    /// An agent's turn: calls the client's shell tool (`Bash`, `exec_command`,
    /// `run_commands`, ...) to echo `fcm-tool-ok`, then answers with what the tool returned.
    ToolRoundTrip,
    /// [`ToolRoundTrip`](Behavior::ToolRoundTrip) with a noisy command (colours, a
    /// progress line redrawn with CRs, one line printed 40 times), answering with whether
    /// its output came back compressed (see `tools::noisy_verdict`).
    NoisyToolRoundTrip,
    /// Streams a word every 100 ms for this long (client disconnects, many open streams).
    LongStream(Duration),
    /// Reasoning, then the answer, in one provider's shape (see [`Thinker`]).
    Thinks(Thinker),
    /// Two parallel tool calls that repeat one id (`call_1`) and continue with `""` and
    /// `null` ids, as some hosts send them.
    RepeatedCallIds,
    /// A call of `Bash` whose arguments are cut off (`{"command":"ec`).
    CutToolArgs,
    /// A call of a tool no client offers (`launch_rockets`).
    UnknownTool,
    /// With an `apply_patch` function offered, a call of it adding `hello.txt` (its one
    /// string argument the patch, as a freeform tool takes it); once the tool answered, or
    /// with no such tool, says so in text.
    Patches,
    /// Streams some text, then a call of `Bash` with cut-off arguments.
    TextThenCutToolArgs,
    /// Text with `finish_reason: tool_calls` but no call at all.
    ToolFinishWithoutCalls,
    /// The shell call written as text in a Hermes `<tool_call>` block, streamed in
    /// 5-character pieces (tags cut), finish `stop`.
    HermesTextCall,
    /// The shell call written as text in a Kimi tool-call section.
    KimiTextCall,
    /// With tools offered, a call of the first one holding its required properties (a
    /// proven tool caller); without, answers like `ok`.
    CallsOfferedTool,
    /// With tools offered, says in words which tool it would call, with no call (a model
    /// that cannot call tools); without, answers like `ok`.
    DescribesOfferedTool,
    /// With tools offered, a call of the first one whose arguments are cut off; without,
    /// answers like `ok`.
    BreaksOfferedTool,
    /// 200 whose whole body is an error saying the model is overloaded, stream asked or
    /// not; with `Retry-After` of this many seconds when given (`overloaded_200:7`).
    Overloaded200(Option<u64>),
    /// Echoes the key it was sent (`Authorization`, else `x-api-key`), masked the way
    /// providers do (`sk-SECRE****7890`): in a 401 `Incorrect API key provided: …` with
    /// `echo_masked_key:401`, else in the content of a 200 answer (streamed when asked).
    EchoMaskedKey {
        status: u16,
    },
    /// A stream whose first write is only blank lines, then writes cut at awkward points
    /// (one byte, inside `data:`, between a CR and its LF), with pauses so that each write
    /// arrives as its own read; the text is `Hello from <model>.`
    SseBlankLinesThenSplit,
    /// Some content, then one `data:` event of about this many bytes (written in 64 KiB
    /// pieces), then the rest of the answer: `Hello ` + the long text + ` and goodbye.`
    SseHugeEvent(usize),
    /// Answers like `ok` with `x-ratelimit-*` headers in one provider's style
    /// (`countdown_groq:3`, `countdown_openrouter`, `countdown_cerebras`,
    /// `countdown_mistral`) that count this model's requests per key down from the limit
    /// (default 3) in windows of [`COUNTDOWN_WINDOW`](super::COUNTDOWN_WINDOW); past the
    /// limit, 429.
    CountsDown {
        style: LimitStyle,
        limit: u64,
    },
    /// 401 for a key holding `REVOKED`; other keys are answered like `ok`.
    RejectsRevoked,
    /// 404 saying the model does not exist, in Groq's words (a retired model).
    ModelNotFound,
    /// Answers like `ok`, and its usage says most of the prompt came from the provider's
    /// cache, in one provider's fields (`cached`: OpenAI's, `cached_deepseek`: DeepSeek's).
    Cached(CacheStyle),
}

/// Where a provider reports the prompt tokens its cache served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheStyle {
    /// `usage.prompt_tokens_details.cached_tokens` (OpenAI, Groq, OpenRouter, Gemini).
    OpenAi,
    /// `usage.prompt_cache_hit_tokens` and `prompt_cache_miss_tokens` (DeepSeek).
    DeepSeek,
}

impl CacheStyle {
    /// Prompt tokens of every cached answer, and how many of them the cache served.
    pub const PROMPT: u64 = 1200;
    pub const CACHED: u64 = 1024;
}

/// How a model finishes another model's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finishing {
    /// Goes on from the last word: ` and the rest (continued: N chars)`.
    GoesOn,
    /// Says the whole answer again, then goes on: `<given> and the rest (restarted)`.
    StartsOver,
    /// Says the answer's last this many words again, then goes on.
    RepeatsLast(usize),
    /// Says the answer's first words again (five, or all but the last of a shorter one),
    /// then something else: it does not fit.
    DepartsFromIt,
}

/// Where a provider puts its model's reasoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Thinker {
    /// `reasoning_content` (DeepSeek, Z.ai, Qwen).
    ReasoningContent,
    /// `reasoning` (gpt-oss on Groq and Cerebras, Ollama).
    Reasoning,
    /// `reasoning` and `reasoning_details` with the same text (OpenRouter).
    ReasoningDetails,
    /// `<think>…</think>` at the start of `content`, streamed in 3-character pieces so the
    /// tags are cut (DeepSeek-R1 hosts).
    ThinkTags,
    /// `content` as an array with a `thinking` part (Mistral's Magistral).
    ContentArray,
}

impl Thinker {
    /// The reasoning every thinker sends, and the answer after it.
    pub const REASONING: &'static str = "First, the user greets me.";
}

/// Whose headers the answers carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitStyle {
    /// `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, resets as Go durations
    /// (`1.2s`, `185ms`).
    Groq,
    /// `X-RateLimit-{Limit,Remaining,Reset}`, the reset as a Unix time in ms.
    OpenRouter,
    /// `x-ratelimit-*-requests-day` and `-tokens-minute`, resets in seconds.
    Cerebras,
    /// `x-ratelimit-{limit,remaining}-req-minute`, no reset header.
    Mistral,
}

impl LimitStyle {
    pub fn parse(name: &str) -> Option<LimitStyle> {
        Some(match name {
            "groq" => LimitStyle::Groq,
            "openrouter" => LimitStyle::OpenRouter,
            "cerebras" => LimitStyle::Cerebras,
            "mistral" => LimitStyle::Mistral,
            _ => return None,
        })
    }
}

impl Behavior {
    /// Parses `name[:param][#tag]`, e.g. `slow:2500`, `rate_limit:30`, `ok#17`.
    pub fn parse(model: &str) -> Option<Behavior> {
        let name = model.split('#').next().unwrap_or("");
        let (name, param) = match name.split_once(':') {
            Some((n, p)) => (n, p.parse::<u64>().ok()),
            None => (name, None),
        };
        let ms = |default: u64| Duration::from_millis(param.unwrap_or(default));
        Some(match name {
            "ok" => Behavior::Ok,
            "ok_stream" => Behavior::OkStream,
            "slow" => Behavior::Slow(ms(300)),
            "empty_choices" => Behavior::EmptyChoices,
            "empty_content" => Behavior::EmptyContent,
            "error_payload_200" => Behavior::ErrorPayload200,
            "invalid_json" => Behavior::InvalidJson,
            "html" => Behavior::Html,
            "sse_empty" => Behavior::SseEmpty,
            "sse_error_first" => Behavior::SseErrorFirst,
            "sse_error_after_content" => Behavior::SseErrorAfterContent,
            "sse_keepalive_then_ok" => Behavior::SseKeepaliveThenOk,
            "rate_limit" => Behavior::RateLimit(param.unwrap_or(30)),
            "rate_limit_reset" => Behavior::RateLimitReset(param.unwrap_or(90)),
            "free_tier_exhausted" => Behavior::FreeTierExhausted,
            "insufficient_quota" => Behavior::InsufficientQuota,
            "context_overflow" => Behavior::ContextOverflow,
            "busy_once" => Behavior::BusyOnce,
            "fails_first" => Behavior::FailsFirst(param.unwrap_or(3)),
            "wrong_sum" => Behavior::WrongSum,
            "paid_notice" => Behavior::PaidNotice,
            "paid_notice_streamed" => Behavior::PaidNoticeStreamed,
            "aider_edit" => Behavior::AiderEdit,
            "auth_401" => Behavior::Auth401,
            "bad_request_400" => Behavior::BadRequest400,
            "server_500" => Behavior::Server500,
            "hang" => Behavior::Hang,
            "drop_connection" => Behavior::DropConnection,
            "sse_no_useful_256k" => Behavior::SseNoUseful256k,
            "reasoning_only" => Behavior::ReasoningOnly,
            "tool_calls_only" => Behavior::ToolCallsOnly,
            "garbage" => Behavior::Garbage(param.unwrap_or(5 * 1024 * 1024) as usize),
            "stall_after_content" => Behavior::StallAfterContent(ms(5000)),
            "drop_after_content" => Behavior::DropAfterContent,
            "cut_at_length" => Behavior::CutAtLength,
            "ends_without_finish" => Behavior::EndsWithoutFinish,
            "finish_then_drop" => Behavior::FinishThenDrop(param.map(Duration::from_millis)),
            // Named like Google's models too, so fcm treats it as Gemini.
            "signed_tool_turns" | "gemini_signed_tool_turns" => Behavior::SignedToolTurns,
            "continues" => Behavior::Finishes(Finishing::GoesOn, param.map(Duration::from_millis)),
            "restarts" => Behavior::Finishes(Finishing::StartsOver, None),
            "repeats_last" => {
                Behavior::Finishes(Finishing::RepeatsLast(param.unwrap_or(2) as usize), None)
            }
            "starts_over" => Behavior::Finishes(Finishing::DepartsFromIt, None),
            "slow_fail" => Behavior::SlowFail(ms(300)),
            "bad_request_after" => Behavior::BadRequestAfter(param.unwrap_or(1)),
            "long_stream" => Behavior::LongStream(ms(10_000)),
            "tool_round_trip" => Behavior::ToolRoundTrip,
            "noisy_tool_round_trip" => Behavior::NoisyToolRoundTrip,
            "thinks_reasoning_content" => Behavior::Thinks(Thinker::ReasoningContent),
            "thinks_reasoning" => Behavior::Thinks(Thinker::Reasoning),
            "thinks_reasoning_details" => Behavior::Thinks(Thinker::ReasoningDetails),
            "thinks_tags" => Behavior::Thinks(Thinker::ThinkTags),
            "thinks_content_array" => Behavior::Thinks(Thinker::ContentArray),
            "repeated_call_ids" => Behavior::RepeatedCallIds,
            "cut_tool_args" => Behavior::CutToolArgs,
            "unknown_tool" => Behavior::UnknownTool,
            "patches" => Behavior::Patches,
            "text_then_cut_tool_args" => Behavior::TextThenCutToolArgs,
            "tool_finish_without_calls" => Behavior::ToolFinishWithoutCalls,
            "hermes_text_call" => Behavior::HermesTextCall,
            "kimi_text_call" => Behavior::KimiTextCall,
            "calls_offered_tool" => Behavior::CallsOfferedTool,
            "describes_offered_tool" => Behavior::DescribesOfferedTool,
            "breaks_offered_tool" => Behavior::BreaksOfferedTool,
            "overloaded_200" => Behavior::Overloaded200(param),
            "echo_masked_key" => Behavior::EchoMaskedKey {
                status: param.and_then(|p| u16::try_from(p).ok()).unwrap_or(200),
            },
            "sse_blank_lines_then_split" => Behavior::SseBlankLinesThenSplit,
            "sse_huge_event" => Behavior::SseHugeEvent(param.unwrap_or(3 * 1024 * 1024) as usize),
            "rejects_revoked" => Behavior::RejectsRevoked,
            "model_not_found" => Behavior::ModelNotFound,
            "cached" => Behavior::Cached(CacheStyle::OpenAi),
            "cached_deepseek" => Behavior::Cached(CacheStyle::DeepSeek),
            _ => match name.strip_prefix("countdown_").and_then(LimitStyle::parse) {
                Some(style) => Behavior::CountsDown {
                    style,
                    limit: param.unwrap_or(3),
                },
                None => return None,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaviours_parse_with_params_and_tags() {
        assert_eq!(Behavior::parse("ok#3"), Some(Behavior::Ok));
        assert_eq!(
            Behavior::parse("slow:2500"),
            Some(Behavior::Slow(Duration::from_millis(2500)))
        );
        assert_eq!(
            Behavior::parse("slow:300#12"),
            Some(Behavior::Slow(Duration::from_millis(300)))
        );
        assert_eq!(Behavior::parse("rate_limit"), Some(Behavior::RateLimit(30)));
        assert_eq!(Behavior::parse("nope"), None);
        assert_eq!(
            Behavior::parse("echo_masked_key:401#a"),
            Some(Behavior::EchoMaskedKey { status: 401 })
        );
        assert_eq!(
            Behavior::parse("overloaded_200"),
            Some(Behavior::Overloaded200(None))
        );
        assert_eq!(
            Behavior::parse("repeats_last:3#next"),
            Some(Behavior::Finishes(Finishing::RepeatsLast(3), None))
        );
        assert_eq!(
            Behavior::parse("finish_then_drop"),
            Some(Behavior::FinishThenDrop(None))
        );
    }

    #[test]
    fn split_and_long_streams_parse() {
        assert_eq!(
            Behavior::parse("sse_blank_lines_then_split#off"),
            Some(Behavior::SseBlankLinesThenSplit)
        );
        assert_eq!(
            Behavior::parse("sse_huge_event"),
            Some(Behavior::SseHugeEvent(3 * 1024 * 1024))
        );
        assert_eq!(
            Behavior::parse("sse_huge_event:2000000"),
            Some(Behavior::SseHugeEvent(2_000_000))
        );
    }
}
