import { html } from '../html.js';
import { page } from './layout.js';

/**
 * `/portal/operator`: an operator signs in with a name and password (portal.operators). A
 * refusal says only that the two did not match, never which one was wrong.
 */
export type SignInProblem = 'wrong' | 'throttled' | 'none-configured';

const PROBLEMS: Record<SignInProblem, { status: number; text: string }> = {
  wrong: { status: 401, text: 'The name or the password is not right. Try again.' },
  throttled: {
    status: 429,
    text: 'Too many tries for this name. Wait a minute, then try again.',
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
