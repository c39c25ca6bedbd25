// Test files in a task folder are not loaded: this one would stop the worker.
throw new Error('leasehold worker loaded a test file');
