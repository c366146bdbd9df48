//! The tmux plugin side: sidebar panes, key tables, hooks and menus, driven through the tmux adapter.
