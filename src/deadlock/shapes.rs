//! Deadlock shapes for `cprace gen`.
