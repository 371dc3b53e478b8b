// Sign in and sign up. The dashboard header makes the gateway answer with the session in an
// HttpOnly cookie instead of a token in the body, so no script on the page ever holds it.
import { useSession } from '../../ui/context.tsx';
import { ErrorBox, Field, formValue, useAction } from '../../ui/components.tsx';
import { href } from '../../ui/router.tsx';

function Credentials({ mode }: { mode: 'signin' | 'signup' }) {
  const { api, refresh } = useSession();
  const action = useAction();
  const title = mode === 'signin' ? 'Sign in' : 'Create an account';
  return (
    <div class="card narrow">
      <h1>{title}</h1>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          const body = { email: formValue(e, 'email'), password: formValue(e, 'password') };
          void action.run(async () => {
            await api.send('POST', mode === 'signin' ? '/portal/auth/login' : '/portal/auth/signup', body);
            await refresh(); // the app then moves on to the page asked for
          });
        }}
      >
        <Field label="E-mail">
          <input name="email" type="email" autoComplete="username" required maxLength={254} />
        </Field>
        <Field label="Password" hint={mode === 'signup' ? 'At least 8 characters.' : undefined}>
          <input name="password" type="password" autoComplete={mode === 'signin' ? 'current-password' : 'new-password'} required />
        </Field>
        <ErrorBox error={action.error} />
        <button type="submit" class="primary" disabled={action.busy}>
          {title}
        </button>
      </form>
      <p>
        {mode === 'signin' ? (
          <>
            No account? <a href={href('signup')}>Create one</a>
          </>
        ) : (
          <>
            Have an account? <a href={href('signin')}>Sign in</a>
          </>
        )}
      </p>
    </div>
  );
}

export const SignIn = () => <Credentials mode="signin" />;
export const SignUp = () => <Credentials mode="signup" />;
