-- What a request asked for: a model's answer ('generation') or a call that is not one
-- ('count_tokens'), which stays out of token, cost and error figures.
ALTER TABLE requests ADD COLUMN kind TEXT NOT NULL DEFAULT 'generation';
-- Which token counts are the gateway's own (the client left midway, or the provider
-- reported none): 'input', 'output' or 'input,output'; NULL when all are the provider's.
ALTER TABLE requests ADD COLUMN tokens_estimated TEXT;
