import { html } from '../html.js';
import { page, type Viewer } from './layout.js';

/**
 * `/portal/operator`: an operator signs in with a name and password (portal.operators). A
 * refusal says only that the two did not match, never which one was wrong.
 */
export type SignInProblem = 'wrong' | 'throttled' | 'none-configured';

const PROBLEMS: Record<SignInProblem, { status: number; text: string }> = {
  wrong: { status: 401, text: 'The name or the password is not right. Try again.' },
  throttled: {
    status: 429,
    text: 'Too many tries. Wait a minute, then try again.',
  },
  'none-configured': {
    status: 401,
    text: 'This service has no operators configured (portal.operators), so nobody can sign in here.',
  },
};

/** `retryAfterSeconds`: a throttled try's wait, sent as `Retry-After`. */
export function operatorSignInPage(
  problem?: SignInProblem,
  name = '',
  retryAfterSeconds?: number,
): Response {
  const refused = problem && PROBLEMS[problem];
  return page({
    title: 'Operator sign-in',
    status: refused?.status ?? 200,
    ...(problem === 'throttled' &&
      retryAfterSeconds !== undefined && {
        headers: { 'retry-after': String(Math.max(1, retryAfterSeconds)) },
      }),
    body: html`<h1>Operator sign-in</h1>
<p>For the people who run this service. Businesses sign in with the link their contact sends them.</p>
${refused && html`<p role="alert" class="notice-box failed">${refused.text}</p>`}
<form method="post" action="/portal/operator" class="sign-in">
<div><label for="name">Name</label>
<input type="text" id="name" name="name" value="${name}" required maxlength="64" autocomplete="username"></div>
<div><label for="password">Password</label>
<input type="password" id="password" name="password" required maxlength="200" autocomplete="current-password"></div>
<div><button type="submit">Sign in</button></div>
</form>`,
  });
}

/**
 * After a sign-in with a hash below the current scrypt cost: the same password hashed at the
 * current one, shown once to the operator who typed it, for `portal.operators` (the service
 * does not rewrite its configuration). Shown again, or to another session: nothing to do.
 */
export function passwordHashPage(viewer: Viewer, hash: string | undefined): Response {
  return page({
    title: 'Your password hash',
    viewer,
    body: hash
      ? html`<h1>Your password hash</h1>
<p>Your password is kept at a lower scrypt cost than the current one (N=2<sup>17</sup>, r=8, p=1).
Replace your <code>passwordHash</code> in <code>portal.operators</code> with this line, then reload
the service. It is shown once.</p>
<pre><code>${hash}</code></pre>
<p><a href="/portal">Continue to the portal</a></p>`
      : html`<h1>Your password hash</h1>
<p>Nothing to change: your password hash is at the current cost, or this page was shown already.</p>
<p><a href="/portal">Continue to the portal</a></p>`,
  });
}
