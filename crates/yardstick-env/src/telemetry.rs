//! Telemetry sampler (work in progress).
