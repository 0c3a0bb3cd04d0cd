//! Parsers of the standard tools' output (nccl-tests, fio JSON, STREAM): work in progress.
