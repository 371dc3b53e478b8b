// The signed-in user's account's transcription jobs, for the dashboard: the same jobs, and the same
// permission, as GET /v1/audio/transcriptions/jobs with any of the account's keys (an organization's
// members all see the organization's jobs, as their keys do), in the portal's page shape.
import { Type } from 'typebox';
import type { App, AppDeps } from '../types.ts';
import { requireSession, sessionOf } from '../auth.ts';
import { Closed, errors, KeyString } from '../schemas.ts';
import { Limit, limitOf, PageOf } from '../pages.ts';
import { Job, JobStatusFilter } from './v1-audio.ts';

export function registerPortalTranscriptionRoutes(app: App, deps: AppDeps): void {
  const { billing, transcriptionJobs } = deps.services;
  app.get(
    '/portal/transcription/jobs',
    {
      preHandler: requireSession(deps),
      schema: {
        tags: ['transcription'], security: [{ session: [] }],
        summary: "Your account's transcription jobs (your organization's while you belong to one), newest first; pass next_after as after",
        querystring: Closed({ limit: Limit, after: Type.Optional(KeyString(64)), status: Type.Optional(JobStatusFilter) }),
        response: { 200: PageOf(Job), ...errors(400, 401) },
      },
    },
    async (req) => {
      const { after, status } = req.query;
      const account = await billing.accountOf(sessionOf(req).id);
      const page = await transcriptionJobs.list(account.walletId, {
        limit: limitOf(req.query),
        ...(after !== undefined ? { after } : {}),
        ...(status !== undefined ? { status } : {}),
      });
      return { data: page.data, has_more: page.has_more, next_after: page.has_more ? page.last_id : null };
    },
  );
}
