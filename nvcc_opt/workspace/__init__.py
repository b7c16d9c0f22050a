"""The only place that starts processes: runners, the bubblewrap sandbox, private build trees."""
