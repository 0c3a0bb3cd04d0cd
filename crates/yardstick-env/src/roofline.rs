//! Roofline placement and bottleneck classification (work in progress).
