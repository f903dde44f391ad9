// Lab 01 contract tests: see the lab's rubric.
