import { html } from '../html.js';
import type { LinkRefusal } from '../links.js';
import { messagePage, page } from './layout.js';

/**
 * The sign-in pages. Opening a link (GET) only shows a "Continue" button: mail and chat link
 * scanners fetch links before people do, and a GET that signed in would spend the link on them.
 * The button POSTs the token, and only that signs in.
 */
export function continuePage(token: string): Response {
  return page({
    title: 'Sign in',
    body: html`<h1>Sign in to your portal</h1>
<p>This link signs you in once. Continue to open the batches and records of your business.</p>
<form method="post" action="/portal/login">
  <input type="hidden" name="token" value="${token}">
  <button type="submit">Continue</button>
</form>`,
  });
}

/** Why a link did not sign in: what it is, never what was wrong inside it. */
export type LinkProblem = LinkRefusal | 'used' | 'not-served';

const REFUSALS: Record<LinkProblem, { status: number; title: string; text: string }> = {
  malformed: {
    status: 400,
    title: 'This sign-in link is not valid',
    text: 'The link is incomplete. Copy the whole link from the message you received, or ask your contact at the warehouse for a new one.',
  },
  tampered: {
    status: 400,
    title: 'This sign-in link is not valid',
    text: 'The link has been changed since it was made. Ask your contact at the warehouse for a new one.',
  },
  expired: {
    status: 410,
    title: 'This sign-in link has expired',
    text: 'Sign-in links are valid for a limited time. Ask your contact at the warehouse for a new one.',
  },
  'not-served': {
    status: 403,
    title: 'This sign-in link is no longer valid',
    text: 'The warehouse no longer serves the business it was made for. Ask your contact at the warehouse.',
  },
  used: {
    status: 409,
    title: 'This sign-in link has already been used',
    text: 'Each sign-in link works once. If you did not use it yourself, tell your contact at the warehouse; ask them for a new one.',
  },
};

export function refusedLinkPage(problem: LinkProblem): Response {
  const { status, title, text } = REFUSALS[problem];
  return messagePage(status, title, text);
}

export function notSignedInPage(): Response {
  return messagePage(
    401,
    'You are not signed in',
    'Your session has ended, or this browser never signed in. Open a new sign-in link from your contact at the warehouse.',
  );
}

export function signedOutPage(): Response {
  return messagePage(
    200,
    'You are signed out',
    'Your session has ended. Open a new sign-in link to come back.',
  );
}
