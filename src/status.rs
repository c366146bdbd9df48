//! The status-line widgets: counts of tasks by state, and publishing them as tmux options.
