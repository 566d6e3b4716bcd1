import { z } from 'zod';

/** A pipeline's \`source\` for a local folder: every option of this store, described once. */
export const localSource = z
  .strictObject({
    type: z.literal('local').meta({ description: 'The store type.' }),
    path: z
      .string()
      .min(1)
      .meta({ description: 'The drop folder.', examples: ['/srv/drops/acme'] }),
    watch: z
      .strictObject({
        enabled: z.boolean().default(true).meta({
          description:
            'Look at the drop as soon as a file appears or is renamed in its top folder (with a `pollIntervalMs` schedule; a `cron` schedule keeps its times). The poll still runs and stays the source of truth.',
        }),
        usePolling: z.boolean().default(false).meta({
          description:
            "Watch by polling the folder instead of the kernel's file events: for network mounts (NFS, SMB, most FUSE), which do not report files written by other machines.",
        }),
        pollingIntervalMs: z
          .int()
          .min(100)
          .max(60_000)
          .default(1_000)
          .meta({ description: 'How often a polling watch looks (`usePolling`).' }),
      })
      .prefault({})
      .meta({
        description:
          "Early looks when files appear (chokidar); the worker's own folders and subfolders are never watched. See docs/file-drops.md#watching-local-drops.",
      }),
  })
  .meta({ title: 'local', description: 'A folder on this machine (or a mounted share).' });
