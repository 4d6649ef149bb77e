"""What keeps a hostile model or repository in bounds: approval, rules, paths, the sandbox."""
