//! The OpenTelemetry semantic conventions ttfx follows: their version, the GenAI names
//! and units it emits, and what `OTEL_SEMCONV_STABILITY_OPT_IN` selects.
//!
//! The GenAI conventions are "Development": names may change between minor versions.
//! Their rule (gen-ai-metrics.md since v1.37) is that an instrumentation keeps emitting
//! the version it first shipped by default, and emits the latest experimental one only
//! when `OTEL_SEMCONV_STABILITY_OPT_IN` lists `gen_ai_latest_experimental`. ttfx's first
//! shipped version is v1.41.0, which is also the latest this build knows, so today both
//! choices emit the same names; the choice is read and named on the wire (the scope's
//! schema URL) so that a later ttfx moving to newer names keeps v1.41.0 for everyone who
//! did not opt in.

/// The version of the semantic conventions every name below comes from.
pub const SEMCONV_VERSION: &str = "1.41.0";

/// Its schema URL, sent with every resource and scope.
pub const SCHEMA_URL: &str = "https://opentelemetry.io/schemas/1.41.0";

/// The value of `OTEL_SEMCONV_STABILITY_OPT_IN` that asks for the latest GenAI names.
pub const GEN_AI_LATEST: &str = "gen_ai_latest_experimental";

/// Which GenAI conventions a run is exported under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GenAiNames {
    /// The version ttfx first shipped (the default).
    Shipped,
    /// The latest experimental version this build knows (opted in).
    LatestExperimental,
}

impl GenAiNames {
    /// From `OTEL_SEMCONV_STABILITY_OPT_IN`: a comma-separated list of categories.
    pub fn from_opt_in(value: Option<&str>) -> GenAiNames {
        let opted = value
            .unwrap_or("")
            .split(',')
            .any(|v| v.trim() == GEN_AI_LATEST);
        if opted {
            GenAiNames::LatestExperimental
        } else {
            GenAiNames::Shipped
        }
    }

    /// The conventions' version these names are (both are v1.41.0 in this build).
    pub fn version(self) -> &'static str {
        match self {
            GenAiNames::Shipped | GenAiNames::LatestExperimental => SEMCONV_VERSION,
        }
    }

    pub fn schema_url(self) -> &'static str {
        match self {
            GenAiNames::Shipped | GenAiNames::LatestExperimental => SCHEMA_URL,
        }
    }
}

// Metric names (gen-ai-metrics.md, v1.41.0).
pub const TIME_TO_FIRST_CHUNK: &str = "gen_ai.client.operation.time_to_first_chunk";
pub const TIME_PER_OUTPUT_CHUNK: &str = "gen_ai.client.operation.time_per_output_chunk";
pub const OPERATION_DURATION: &str = "gen_ai.client.operation.duration";
pub const TOKEN_USAGE: &str = "gen_ai.client.token.usage";

// Attribute names (gen-ai-spans.md and the registry, v1.41.0).
pub const OPERATION_NAME: &str = "gen_ai.operation.name";
pub const PROVIDER_NAME: &str = "gen_ai.provider.name";
pub const REQUEST_MODEL: &str = "gen_ai.request.model";
pub const TOKEN_TYPE: &str = "gen_ai.token.type";
pub const USAGE_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";
pub const SERVER_ADDRESS: &str = "server.address";
pub const SERVER_PORT: &str = "server.port";
pub const ERROR_TYPE: &str = "error.type";
pub const SERVICE_NAME: &str = "service.name";

/// `gen_ai.operation.name` of every ttfx run: a streamed chat completion (the only
/// operation a field report measures).
pub const OPERATION_CHAT: &str = "chat";

/// Bucket bounds, in seconds, the conventions advise for `gen_ai.client.operation.duration`;
/// ttfx uses them for every histogram in seconds (each data point's sum, min and max
/// hold the exact value anyway).
pub const SECONDS_BOUNDS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/// Bucket bounds the conventions advise for `gen_ai.client.token.usage`.
pub const TOKEN_BOUNDS: [f64; 14] = [
    1.0,
    4.0,
    16.0,
    64.0,
    256.0,
    1024.0,
    4096.0,
    16384.0,
    65536.0,
    262_144.0,
    1_048_576.0,
    4_194_304.0,
    16_777_216.0,
    67_108_864.0,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_gen_ai_category_opts_in() {
        assert_eq!(GenAiNames::from_opt_in(None), GenAiNames::Shipped);
        assert_eq!(
            GenAiNames::from_opt_in(Some("http,database")),
            GenAiNames::Shipped
        );
        assert_eq!(
            GenAiNames::from_opt_in(Some("http, gen_ai_latest_experimental")),
            GenAiNames::LatestExperimental
        );
        assert_eq!(GenAiNames::Shipped.version(), "1.41.0");
    }
}
