/**
 * Logs and diagnostics for Settings: where the log file is (or why there is none), and the
 * report a person pastes into an issue, copied to the clipboard — or shown to copy by hand
 * where the page has no clipboard (a plain-http page that is not localhost, a refusal).
 */
import type { ProviderHealth } from './api';

/** `log` in `GET /admin/api/diagnostics`. */
export interface LogStatus {
  /** Turned off (`TRIMGATE_LOG_DIR=off`): the log goes to the program's output only. */
  off: boolean;
  dir: string | null;
  file: string | null;
  /** Lines are being written to `file`. */
  writable: boolean;
  /** Why not, when a file was wanted. */
  error: string | null;
}

/** A warning or error as the log printed it. */
export interface LoggedEvent {
  time: string;
  level: string;
  target: string;
  message: string;
}

/** `GET /admin/api/diagnostics`: every key and secret already hidden by the gateway. */
export interface Diagnostics {
  version: string;
  os: string;
  listen: string;
  config_path: string | null;
  config: string;
  providers: ProviderHealth[];
  last_errors: LoggedEvent[];
  log: LogStatus;
  /** The same as a plain-text report. */
  text: string;
}

/** What Settings shows about the log file. */
export interface LogFileView {
  /** The file's path when one is written (or wanted). */
  path: string | null;
  /** The dir to open or copy, when lines go there. */
  dir: string | null;
  /** Said beside the path: why there is no file, or nothing. */
  problem: string | null;
}

export function logFileView(log: LogStatus): LogFileView {
  if (log.off) {
    return {
      path: null,
      dir: null,
      problem: 'The log file is off (TRIMGATE_LOG_DIR=off): the log goes to the program’s output only.',
    };
  }
  if (!log.writable) {
    const where = log.dir ?? 'the log dir';
    return {
      path: log.file,
      dir: null,
      problem: `Cannot write the log file in ${where}: ${log.error ?? 'unknown error'}. The log goes to the program’s output only; set TRIMGATE_LOG_DIR to another dir.`,
    };
  }
  return { path: log.file, dir: log.dir, problem: null };
}

export interface ClipboardLike {
  writeText(text: string): Promise<void>;
}

/** The page's clipboard, or null where it has none (a page that is not a secure context). */
export function browserClipboard(nav: unknown = typeof navigator === 'undefined' ? undefined : navigator): ClipboardLike | null {
  const clipboard = (nav as { clipboard?: Partial<ClipboardLike> } | undefined)?.clipboard;
  return clipboard && typeof clipboard.writeText === 'function' ? (clipboard as ClipboardLike) : null;
}

/** Copies `text`; false when there is no clipboard or it refused, so the page shows the text instead. */
export async function copyText(text: string, clipboard: ClipboardLike | null): Promise<boolean> {
  if (!clipboard) return false;
  try {
    await clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}
