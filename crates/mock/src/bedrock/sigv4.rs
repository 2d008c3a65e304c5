//! Who calls Bedrock: a SigV4-signed request (`Authorization: AWS4-HMAC-SHA256
//! Credential=…, SignedHeaders=…, Signature=…` with `x-amz-date`) or a Bedrock API key
//! (`Authorization: Bearer …`).
//!
//! The form is checked as AWS checks it, with AWS's messages: the parameters present, the
//! credential scope (`<key id>/<yyyymmdd>/<region>/bedrock/aws4_request`) agreeing with
//! `x-amz-date`, that date within five minutes of the mock's clock, the signed headers
//! present. The signature itself is not computed here: the tests recompute it (botocore)
//! from the request `/_mock/requests` captured.

use http::header::AUTHORIZATION;
use http::HeaderMap;

use super::super::{dates, header_str};

const ALGORITHM: &str = "AWS4-HMAC-SHA256";
const SERVICE: &str = "bedrock";
const TERMINATOR: &str = "aws4_request";
/// How far `x-amz-date` may be from the service's clock.
const MAX_SKEW_SECS: u64 = 300;

const SIGNATURE_MISMATCH: &str = "The request signature we calculated does not match the \
    signature you provided. Check your AWS Secret Access Key and signing method. Consult the \
    service documentation for details.";

/// The caller, once its credentials have the right form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Caller {
    /// SigV4: the region the credential scope names.
    Signed { region: String },
    /// A Bedrock API key.
    ApiKey,
}

/// Why AWS refuses the credentials (403, in the `coral.service` namespace).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub kind: &'static str,
    pub message: String,
}

impl Refusal {
    fn new(kind: &'static str, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    fn invalid(message: impl Into<String>) -> Self {
        Self::new("InvalidSignatureException", message)
    }

    fn incomplete(message: impl Into<String>) -> Self {
        Self::new("IncompleteSignatureException", message)
    }
}

/// The `Authorization` header's parts.
struct Authorization<'a> {
    credential: Option<&'a str>,
    signed_headers: Option<&'a str>,
    signature: Option<&'a str>,
}

impl<'a> Authorization<'a> {
    /// `AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…, Signature=…`; `None` for another scheme.
    fn parse(value: &'a str) -> Option<Self> {
        let rest = value.strip_prefix(ALGORITHM)?;
        if !rest.is_empty() && !rest.starts_with(' ') {
            return None;
        }
        let mut parsed = Self {
            credential: None,
            signed_headers: None,
            signature: None,
        };
        for pair in rest.split(',') {
            let Some((key, value)) = pair.trim().split_once('=') else {
                continue;
            };
            let value = Some(value.trim()).filter(|v| !v.is_empty());
            match key.trim() {
                "Credential" => parsed.credential = value,
                "SignedHeaders" => parsed.signed_headers = value,
                "Signature" => parsed.signature = value,
                _ => {}
            }
        }
        Some(parsed)
    }
}

/// The region in a SigV4 credential scope, for the record of what arrived.
pub(crate) fn region(headers: &HeaderMap) -> Option<String> {
    let auth = Authorization::parse(header_str(headers, AUTHORIZATION.as_str())?)?;
    let scope: Vec<&str> = auth.credential?.split('/').collect();
    (scope.len() == 5)
        .then(|| scope[2].to_owned())
        .filter(|r| !r.is_empty())
}

/// The caller's credentials checked at `now` (Unix seconds).
pub(crate) fn check(headers: &HeaderMap, now: u64) -> Result<Caller, Refusal> {
    let Some(value) = header_str(headers, AUTHORIZATION.as_str()) else {
        return Err(Refusal::new(
            "MissingAuthenticationTokenException",
            "Missing Authentication Token",
        ));
    };
    if let Some(key) = value.strip_prefix("Bearer ") {
        return if key.trim().is_empty() {
            Err(Refusal::new(
                "MissingAuthenticationTokenException",
                "Missing Authentication Token",
            ))
        } else {
            Ok(Caller::ApiKey)
        };
    }
    let auth = Authorization::parse(value).unwrap_or(Authorization {
        credential: None,
        signed_headers: None,
        signature: None,
    });
    let amz_date = header_str(headers, "x-amz-date");
    let mut missing = String::new();
    for (name, part) in [
        ("Credential", auth.credential),
        ("Signature", auth.signature),
        ("SignedHeaders", auth.signed_headers),
    ] {
        if part.is_none() {
            missing.push_str(&format!(
                "Authorization header requires '{name}' parameter. "
            ));
        }
    }
    if amz_date.is_none() {
        missing.push_str(
            "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' \
             header. ",
        );
    }
    let (Some(credential), Some(signed_headers), Some(signature), Some(amz_date)) = (
        auth.credential,
        auth.signed_headers,
        auth.signature,
        amz_date,
    ) else {
        return Err(Refusal::incomplete(format!(
            "{missing}Authorization={value}"
        )));
    };
    let scope: Vec<&str> = credential.split('/').collect();
    let [_key_id, scope_date, region, service, terminator] = scope[..] else {
        return Err(Refusal::incomplete(format!(
            "Credential must have exactly 5 slash-delimited elements, e.g. \
             keyid/date/region/service/term, got '{credential}'"
        )));
    };
    let Some(signed_at) = dates::parse_amz_date(amz_date) else {
        return Err(Refusal::incomplete(format!(
            "Date must be in ISO-8601 'basic format'. Got '{amz_date}'. See \
             http://en.wikipedia.org/wiki/ISO_8601"
        )));
    };
    if terminator != TERMINATOR {
        return Err(Refusal::invalid(format!(
            "Credential should be scoped with a valid terminator: '{TERMINATOR}', not \
             '{terminator}'. "
        )));
    }
    if service != SERVICE {
        return Err(Refusal::invalid(format!(
            "Credential should be scoped to correct service: '{SERVICE}'. "
        )));
    }
    if region.is_empty() {
        return Err(Refusal::invalid(
            "Credential should be scoped to a valid region. ",
        ));
    }
    if scope_date != &amz_date[..8] {
        return Err(Refusal::invalid(format!(
            "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date \
             from HTTP: '{scope_date}' != '{}', from '{amz_date}'.",
            &amz_date[..8]
        )));
    }
    if signed_at + MAX_SKEW_SECS < now {
        return Err(Refusal::invalid(format!(
            "Signature expired: {amz_date} is now earlier than {} ({} - 5 min.)",
            dates::amz_date(now - MAX_SKEW_SECS),
            dates::amz_date(now)
        )));
    }
    if signed_at > now + MAX_SKEW_SECS {
        return Err(Refusal::invalid(format!(
            "Signature not yet current: {amz_date} is still later than {} ({} + 5 min.)",
            dates::amz_date(now + MAX_SKEW_SECS),
            dates::amz_date(now)
        )));
    }
    let signed: Vec<&str> = signed_headers.split(';').collect();
    if !signed.contains(&"host") {
        return Err(Refusal::invalid(
            "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization.",
        ));
    }
    // A header signed but not sent, or a signature that is no HMAC-SHA256, cannot match.
    let unsent = signed
        .iter()
        .any(|name| *name != "host" && !headers.contains_key(*name));
    let hex = signature.len() == 64
        && signature
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if unsent || !hex {
        return Err(Refusal::invalid(SIGNATURE_MISMATCH));
    }
    Ok(Caller::Signed {
        region: region.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use http::{HeaderMap, HeaderValue};

    use super::{check, region, Caller};
    use crate::dates::{amz_date, parse_amz_date};

    const SIGNATURE: &str = "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7";

    fn signed(date: &str, scope: &str, signed_headers: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            "authorization",
            HeaderValue::from_str(&format!(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/{scope}, \
                 SignedHeaders={signed_headers}, Signature={SIGNATURE}"
            ))
            .unwrap(),
        );
        headers.insert("x-amz-date", HeaderValue::from_str(date).unwrap());
        headers
    }

    fn now() -> u64 {
        parse_amz_date("20261207T102012Z").unwrap()
    }

    #[test]
    fn a_well_formed_signature_names_its_region() {
        let headers = signed(
            "20261207T101800Z",
            "20261207/eu-west-3/bedrock/aws4_request",
            "host;x-amz-date",
        );
        assert_eq!(
            check(&headers, now()),
            Ok(Caller::Signed {
                region: "eu-west-3".to_owned()
            })
        );
        assert_eq!(region(&headers).as_deref(), Some("eu-west-3"));
    }

    #[test]
    fn a_date_more_than_five_minutes_off_is_refused_with_awss_message() {
        let old = signed(
            "20261207T101010Z",
            "20261207/us-east-1/bedrock/aws4_request",
            "host;x-amz-date",
        );
        let refusal = check(&old, now()).unwrap_err();
        assert_eq!(refusal.kind, "InvalidSignatureException");
        assert_eq!(
            refusal.message,
            "Signature expired: 20261207T101010Z is now earlier than 20261207T101512Z \
             (20261207T102012Z - 5 min.)"
        );
        let ahead = signed(
            &amz_date(now() + 301),
            "20261207/us-east-1/bedrock/aws4_request",
            "host;x-amz-date",
        );
        let refusal = check(&ahead, now()).unwrap_err();
        assert!(
            refusal
                .message
                .starts_with("Signature not yet current: 20261207T102513Z"),
            "{}",
            refusal.message
        );
    }

    #[test]
    fn a_scope_for_another_service_or_day_is_refused() {
        let date = "20261207T102000Z";
        let other = signed(
            date,
            "20261207/us-east-1/s3/aws4_request",
            "host;x-amz-date",
        );
        assert_eq!(
            check(&other, now()).unwrap_err().message,
            "Credential should be scoped to correct service: 'bedrock'. "
        );
        let day = signed(date, "20261206/us-east-1/bedrock/aws4_request", "host");
        assert!(check(&day, now())
            .unwrap_err()
            .message
            .starts_with("Date in Credential scope does not match YYYYMMDD"));
        let short = signed(date, "20261207/bedrock/aws4_request", "host");
        assert_eq!(
            check(&short, now()).unwrap_err().kind,
            "IncompleteSignatureException"
        );
        let unsent = signed(
            date,
            "20261207/us-east-1/bedrock/aws4_request",
            "host;x-amz-security-token",
        );
        assert!(check(&unsent, now())
            .unwrap_err()
            .message
            .starts_with("The request signature we calculated does not match"));
    }

    #[test]
    fn missing_parts_are_each_named() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "authorization",
            HeaderValue::from_static(
                "AWS4-HMAC-SHA256 Credential=AKID/20261207/us-east-1/bedrock/aws4_request",
            ),
        );
        let refusal = check(&headers, now()).unwrap_err();
        assert_eq!(refusal.kind, "IncompleteSignatureException");
        assert_eq!(
            refusal.message,
            "Authorization header requires 'Signature' parameter. Authorization header \
             requires 'SignedHeaders' parameter. Authorization header requires existence of \
             either a 'X-Amz-Date' or a 'Date' header. Authorization=AWS4-HMAC-SHA256 \
             Credential=AKID/20261207/us-east-1/bedrock/aws4_request"
        );
        assert_eq!(
            check(&HeaderMap::new(), now()).unwrap_err().kind,
            "MissingAuthenticationTokenException"
        );
        let mut bearer = HeaderMap::new();
        bearer.insert(
            "authorization",
            HeaderValue::from_static("Bearer ABSKbW9jaw=="),
        );
        assert_eq!(check(&bearer, now()), Ok(Caller::ApiKey));
    }
}
