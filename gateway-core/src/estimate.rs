//! What a request used when its provider did not say. A client that leaves midway, or a
//! provider whose answer carries no usage, still cost tokens: the record carries the
//! provider's counts where they came (Anthropic reports input at a stream's start) and the
//! gateway's own o200k counts for the rest (the request as it was forwarded, the text
//! relayed so far), each marked as estimated, never zero as if it were free.

use bytes::Bytes;

use crate::answer_text::AnswerText;
use crate::dialect::Dialect;
use crate::usage::Usage;

/// Which of a record's token counts are the gateway's own rather than the provider's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Estimated {
    pub input: bool,
    pub output: bool,
}

impl Estimated {
    /// The ledger's `tokens_estimated`: `None` when every count is the provider's.
    pub fn as_str(self) -> Option<&'static str> {
        match (self.input, self.output) {
            (false, false) => None,
            (true, false) => Some("input"),
            (false, true) => Some("output"),
            (true, true) => Some("input,output"),
        }
    }
}

/// What the answer said, as far as it got.
#[derive(Debug, Default)]
pub enum Said {
    #[default]
    Nothing,
    /// A stream's text, relayed so far.
    Streamed(AnswerText),
    /// A whole answer in a provider's dialect.
    Whole(Dialect, Bytes),
}

/// What the gateway holds to count a request by when the provider's counts are missing.
#[derive(Debug, Default)]
pub struct Evidence {
    /// The request as it went to the provider, in the provider's dialect.
    pub sent: Option<(Dialect, Bytes)>,
    pub said: Said,
}

impl Evidence {
    /// Bytes a count would read: above some tens of kilobytes it belongs off the serving
    /// threads.
    pub fn weight(&self) -> usize {
        let sent = self.sent.as_ref().map_or(0, |(_, b)| b.len());
        let said = match &self.said {
            Said::Nothing => 0,
            Said::Streamed(_) => AnswerText::KEPT / 4,
            Said::Whole(_, b) => b.len(),
        };
        sent + said
    }

    /// The usage to record. `whole` says the provider's usage, when there is one, covers the
    /// whole answer (the answer ended); otherwise its output count may stop short of what
    /// was relayed, and the relayed text's count stands unless the provider's is larger
    /// (Gemini counts as it goes). Input the provider did not report is the
    /// forwarded request's count.
    pub fn fill(&self, usage: Option<Usage>, whole: bool) -> (Option<Usage>, Estimated) {
        if whole && usage.is_some_and(|u| u.input > 0 || u.output > 0) {
            return (usage, Estimated::default());
        }
        let mut u = usage.unwrap_or_default();
        let mut estimated = Estimated::default();
        if u.input == 0 {
            if let Some(n) = self
                .sent
                .as_ref()
                .and_then(|(dialect, body)| crate::translate::count::sent_tokens(*dialect, body))
            {
                u.input = n;
                estimated.input = n > 0;
            }
        }
        let said = match &self.said {
            Said::Nothing => 0,
            Said::Streamed(text) => text.tokens(),
            Said::Whole(dialect, body) => {
                crate::translate::count::answer_tokens(*dialect, body).unwrap_or(0)
            }
        };
        // A count the provider gave before the end (Anthropic's `message_start` says 1)
        // is a placeholder, not the answer's: what was relayed stands when it is as large.
        if said > 0 && said >= u.output {
            u.output = said;
            estimated.output = true;
        }
        if usage.is_none() && u == Usage::default() {
            return (None, estimated);
        }
        (Some(u), estimated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent() -> Option<(Dialect, Bytes)> {
        Some((
            Dialect::AnthropicMessages,
            Bytes::from_static(
                br#"{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hello world"}]}"#,
            ),
        ))
    }

    fn streamed(text: &[u8]) -> Said {
        let mut t = AnswerText::default();
        t.observe(Dialect::AnthropicMessages, text);
        Said::Streamed(t)
    }

    #[test]
    fn a_whole_answers_usage_stands() {
        let e = Evidence {
            sent: sent(),
            said: streamed(br#"{"delta":{"text":"many words here"}}"#),
        };
        let provider = Usage {
            input: 40,
            output: 2,
            ..Usage::default()
        };
        assert_eq!(
            e.fill(Some(provider), true),
            (Some(provider), Estimated::default())
        );
    }

    #[test]
    fn a_stream_left_midway_keeps_the_providers_input_and_counts_the_output_relayed() {
        let e = Evidence {
            sent: sent(),
            said: streamed(br#"{"delta":{"text":"one two three four five"}}"#),
        };
        // Anthropic's message_start: the input, and an output of 1 so far.
        let start = Usage {
            input: 40,
            output: 1,
            cache_read: 30,
            ..Usage::default()
        };
        let (u, est) = e.fill(Some(start), false);
        let u = u.unwrap();
        assert_eq!((u.input, u.cache_read), (40, 30));
        assert_eq!(u.output, 5);
        assert_eq!(
            est,
            Estimated {
                input: false,
                output: true
            }
        );
        assert_eq!(est.as_str(), Some("output"));
    }

    #[test]
    fn a_placeholder_output_count_is_not_the_providers_answer() {
        let e = Evidence {
            sent: sent(),
            said: streamed(br#"{"delta":{"text":"one"}}"#),
        };
        let start = Usage {
            input: 40,
            output: 1,
            ..Usage::default()
        };
        let (u, est) = e.fill(Some(start), false);
        assert_eq!(u.map(|u| u.output), Some(1));
        assert!(est.output && !est.input, "{est:?}");
        // A provider that counts as it goes (Gemini) past what was relayed: its count.
        let ahead = Usage {
            input: 40,
            output: 9,
            ..Usage::default()
        };
        let (u, est) = e.fill(Some(ahead), false);
        assert_eq!(u.map(|u| u.output), Some(9));
        assert_eq!(est, Estimated::default());
    }

    #[test]
    fn without_any_usage_the_forwarded_request_is_counted() {
        let e = Evidence {
            sent: sent(),
            said: Said::Nothing,
        };
        let (u, est) = e.fill(None, false);
        // "hello world" is 2 tokens, with the framing count::count_tokens adds.
        assert_eq!(u.map(|u| (u.input, u.output)), Some((8, 0)));
        assert_eq!(est.as_str(), Some("input"));

        let whole = Evidence {
            sent: sent(),
            said: Said::Whole(
                Dialect::OpenAiChat,
                Bytes::from_static(
                    br#"{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi there"},"finish_reason":"stop"}]}"#,
                ),
            ),
        };
        let (u, est) = whole.fill(None, true);
        assert_eq!(u.map(|u| (u.input, u.output)), Some((8, 2)));
        assert_eq!(est.as_str(), Some("input,output"));
    }

    #[test]
    fn nothing_sent_and_nothing_said_is_no_usage() {
        assert_eq!(
            Evidence::default().fill(None, false),
            (None, Estimated::default())
        );
    }
}
