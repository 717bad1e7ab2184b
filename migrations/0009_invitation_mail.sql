-- Invitation tokens reach the invitee by email (the send_email binding): token_mailed = 1 when this invitation's
-- token was mailed to its email, which proves the mailbox, so that a token alone may make a new account. An
-- invitation made before (its token shown to the inviter) never may: accepting it needs the invitee's own key.
ALTER TABLE invitations ADD COLUMN token_mailed INTEGER NOT NULL DEFAULT 0 CHECK (token_mailed IN (0, 1));
