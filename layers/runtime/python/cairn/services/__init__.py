"""Use cases, one module per resource: the API and the handlers call these, never the store.

Each function takes the process's `Runtime` and the caller's organization, owns its
transaction, and returns domain objects (or small views of them); turning those into
Letta's wire shapes is the API's job.
"""
