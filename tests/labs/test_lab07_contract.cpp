// Lab 07 contract tests: see the lab's rubric.
