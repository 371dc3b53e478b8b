// A recorded call's page in Chromium, through the cookie session: the recording plays in an <audio>
// element that reads it by byte ranges; a click on a transcript turn's times plays the recording from
// that turn (the recording's 0 is the answer, as the transcript's); the WAV and MP3 download links;
// a call recording still says so; another site's page embedding the recording is refused; Delete,
// after a confirmation, and the page says it is deleted; an organization's member is not offered
// Delete and the API refuses it (an admin demoted while the page is open is shown the refusal).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, createKey, joinOrg, signup } from '../helper.ts';
import { place, ended, waitForCall } from '../voice/helpers.ts';
import { apiSession, openTab, signUpInBrowser } from './browser.ts';
import { voiceDashboard } from './voice.ts';

describe('dashboard: a call recording', () => {
  const v = voiceDashboard();

  it('plays the recording, and from a turn when the turn is clicked; downloads; says when it is deleted', async () => {
    const tab = await openTab(v.d);
    const { page } = tab;
    const email = await signUpInBrowser(tab, v.d);
    const token = await apiSession(v.d, email);
    const me = (await call(v.d.base, 'GET', '/portal/me', { token })).body.user.id as number;
    assert.equal((await call(v.d.base, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: me, amount_cents: 1000 } })).status, 201);
    const key = (await createKey(v.d.base, token)).api_key;
    v.stt.say('the ATM did not give money but my account got debited', 'yes please');
    const placed = await place(v.d.gw, key, { model: 'voice-test', to: '+919800000010', record: true });
    assert.equal(placed.status, 202, placed.text);
    const id = placed.body.id as string;
    const audioAnswers: number[] = [];
    page.on('response', (res) => {
      if (/\/portal\/voice\/calls\/[^/?]+\/recording$/.test(res.url())) audioAnswers.push(res.status());
    });
    await page.goto(`${v.d.base}/dashboard/calls/${id}`);
    await page.getByTestId('recording-status').getByText('being recorded').waitFor({ timeout: 10_000 });
    const c = await waitForCall(v.d.gw, key, id, (x) => ended(x) && x.recording?.available, 40_000);
    assert.equal(c.recording.available, true, JSON.stringify(c.recording));
    // The page follows the call to its recording without a reload.
    await page.getByLabel("The call's recording").waitFor({ timeout: 10_000 });
    // Polled (the dashboard's CSP refuses waitForFunction's eval'd predicate).
    for (const until = Date.now() + 10_000; ((await page.evaluate("document.querySelector('audio').readyState")) as number) < 1; ) {
      assert.ok(Date.now() < until, 'the recording is loaded within 10 s');
      await page.waitForTimeout(50);
    }
    const duration = (await page.evaluate("document.querySelector('audio').duration")) as number;
    assert.ok(Math.abs(duration - c.recording.duration_seconds) < 0.05, `the player's ${duration} s, the call's ${c.recording.duration_seconds} s`);
    const buttons = page.getByTestId('call-turns').locator('.play-turn');
    assert.equal(await buttons.count(), c.transcript.length);
    const callee = c.transcript.findIndex((t: { role: string }) => t.role === 'callee');
    const turn = buttons.nth(callee);
    const span = { start: Number(await turn.getAttribute('data-start')), end: Number(await turn.getAttribute('data-end')) };
    assert.deepEqual(span, { start: c.transcript[callee].start, end: c.transcript[callee].end });
    await turn.click();
    await page.waitForTimeout(300);
    const at = (await page.evaluate("document.querySelector('audio').currentTime")) as number;
    assert.ok(at >= span.start && at <= span.end + 0.3, `currentTime ${at} within ${span.start}–${span.end}`);
    assert.ok(audioAnswers.includes(206), `the recording was read by ranges: ${audioAnswers.join(', ')}`);
    assert.equal(await page.getByRole('link', { name: 'WAV' }).getAttribute('href'), `/portal/voice/calls/${id}/recording`);
    assert.equal(await page.getByRole('link', { name: 'MP3' }).getAttribute('href'), `/portal/voice/calls/${id}/recording?format=mp3`);
    await tab.checkA11y('a recorded call');
    await tab.screenshot('call-recording');

    // Another site's page embedding the recording (the cookie rides along) is refused.
    const cookie = (await tab.context.cookies()).map((k) => `${k.name}=${k.value}`).join('; ');
    const embedded = await fetch(`${v.d.base}/portal/voice/calls/${id}/recording`, { headers: { cookie, 'sec-fetch-site': 'cross-site' } });
    assert.equal(embedded.status, 403);
    assert.equal(((await embedded.json()) as any).error.code, 'cross_site_request');
    const own = await fetch(`${v.d.base}/portal/voice/calls/${id}/recording`, { headers: { cookie, 'sec-fetch-site': 'same-origin', range: 'bytes=0-43' } });
    assert.equal(own.status, 206, 'the same cookie from its own pages reads it');

    // Delete, after a confirmation: dismissed, nothing happens; accepted, the page says it is
    // deleted without a reload, offers no player, and the API agrees.
    const deletes: string[] = [];
    page.on('request', (req) => req.method() === 'DELETE' && deletes.push(req.url()));
    const questions: string[] = [];
    page.once('dialog', (dialog) => {
      questions.push(dialog.message());
      void dialog.dismiss();
    });
    await page.getByRole('button', { name: 'Delete recording' }).click();
    await page.waitForTimeout(200);
    assert.deepEqual(deletes, [], 'nothing is asked before the confirmation');
    assert.match(questions[0] ?? '', /^Delete the recording of the call to \+919800000010\? It cannot be undone/);
    assert.equal((await call(v.d.base, 'GET', `/v1/voice/calls/${id}`, { token: key })).body.recording.available, true);
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Delete recording' }).click();
    await page.getByTestId('recording-status').getByText('The recording was deleted').waitFor();
    assert.deepEqual(deletes, [`${v.d.base}/portal/voice/calls/${id}/recording`]);
    assert.equal(await page.locator('audio').count(), 0);
    assert.equal(await buttons.count(), 0, 'the turns are text again');
    assert.equal((await call(v.d.base, 'GET', `/v1/voice/calls/${id}`, { token: key })).body.recording.status, 'deleted');
    tab.assertClean();
    await tab.close();
  });

  it("an organization's member is not offered Delete (the API refuses it); an admin demoted meanwhile is shown the refusal; an admin deletes", async () => {
    const tab = await openTab(v.d);
    const { page } = tab;
    const email = await signUpInBrowser(tab, v.d);
    const token = await apiSession(v.d, email);
    const boss = await signup(v.d.base);
    const org = await call(v.d.base, 'POST', '/portal/org', { token: boss.token, body: { name: 'Recorded calls' } });
    assert.equal(org.status, 201, org.text);
    const { id: me } = (await call(v.d.base, 'GET', '/portal/me', { token })).body.user as { id: number };
    await joinOrg(v.d.base, boss.token, { email, token });
    assert.equal((await call(v.d.base, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { org_id: org.body.id, amount_cents: 1000 } })).status, 201);
    const key = (await createKey(v.d.base, token)).api_key;
    const placed = await place(v.d.gw, key, { model: 'voice-test', to: '+919800000012', record: true });
    assert.equal(placed.status, 202, placed.text);
    const id = placed.body.id as string;
    await waitForCall(v.d.gw, key, id, (x) => ended(x) && x.recording?.available, 40_000);

    await page.goto(`${v.d.base}/dashboard/calls/${id}`);
    await page.getByLabel("The call's recording").waitFor();
    assert.equal(await page.getByRole('button', { name: 'Delete recording' }).count(), 0, 'a member is not offered Delete');
    for (const [path, credential] of [
      [`/portal/voice/calls/${id}/recording`, token],
      [`/v1/voice/calls/${id}/recording`, key],
    ] as const) {
      const refused = await call(v.d.base, 'DELETE', path, { token: credential });
      assert.deepEqual([refused.status, refused.body.error.code], [403, 'role_forbidden'], path);
    }

    // Made an admin, the page (read afresh) offers Delete; demoted while it is open, the click gets the API's refusal.
    const setRole = async (role: string) =>
      assert.equal((await call(v.d.base, 'PATCH', `/portal/org/members/${me}`, { token: boss.token, body: { role } })).status, 200);
    await setRole('admin');
    await page.reload();
    await page.getByRole('button', { name: 'Delete recording' }).waitFor();
    await setRole('member');
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Delete recording' }).click();
    await page.getByRole('alert').getByText("Only the organization's owner or an admin can delete a call's recording.").waitFor();
    await page
      .getByRole('alert')
      .getByText(/role_forbidden, request /)
      .waitFor();
    assert.equal((await call(v.d.base, 'GET', `/portal/voice/calls/${id}`, { token: boss.token })).body.recording.available, true, 'still there');
    // An admin again, the same button deletes it.
    await setRole('admin');
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Delete recording' }).click();
    await page.getByTestId('recording-status').getByText('The recording was deleted').waitFor();
    assert.equal(await page.getByRole('alert').count(), 0, 'the refusal is cleared');
    assert.equal((await call(v.d.base, 'GET', `/portal/voice/calls/${id}`, { token: boss.token })).body.recording.status, 'deleted');
    tab.assertClean();
    await tab.close();
  });
});
