"""The audit log: who changed policies, reward models, task types, labels, queues and API keys."""
