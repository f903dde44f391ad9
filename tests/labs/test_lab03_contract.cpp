// Lab 03 contract tests: see the lab's rubric.
