//! All integration tests, in one binary so that they link once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
