import { defineConfig } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';

// `npm run dev` forwards the admin API to a running gateway (TRIMGATE_URL, default
// http://127.0.0.1:8788) as if the page came from it: the gateway refuses other origins.
const gateway = process.env.TRIMGATE_URL ?? 'http://127.0.0.1:8788';

// `base: './'` keeps every asset URL relative, so the same build works under the
// gateway's `/ui/` and from the desktop shell's bundle.
export default defineConfig({
  base: './',
  plugins: [svelte()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    assetsInlineLimit: 0,
    reportCompressedSize: true,
  },
  server: {
    host: '127.0.0.1',
    proxy: {
      '/admin/api': {
        target: gateway,
        changeOrigin: true,
        configure: (proxy) => {
          proxy.on('proxyReq', (req) => {
            if (req.getHeader('origin')) req.setHeader('origin', gateway);
          });
        },
      },
    },
  },
});
