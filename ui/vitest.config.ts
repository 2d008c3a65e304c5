import { defineConfig } from 'vitest/config';

// Unit tests run in plain Node: the modules under test take their browser
// surroundings (location, storage, fetch) as arguments.
export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    environment: 'node',
  },
});
