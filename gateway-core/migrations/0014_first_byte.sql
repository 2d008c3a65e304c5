-- From arrival to the provider's response headers, for the window's request detail.
ALTER TABLE requests ADD COLUMN first_byte_ms DOUBLE PRECISION;
