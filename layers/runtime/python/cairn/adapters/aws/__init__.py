"""The AWS adapters: SQS, Step Functions, Secrets Manager, Lambda (the tools' sandbox and
the streaming runtime loop), Bedrock, and the operator's remote commands. The only modules
of `cairn` that use boto3."""
