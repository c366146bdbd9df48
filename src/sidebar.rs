//! The sidebar: a model of one task's workspace and a pure render of it.
